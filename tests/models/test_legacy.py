"""The flat (v1) architectures (``spacy_nested_mrc.models.legacy``) and their translation to
the configs in blocks (``models.upgrade``): every flat setting has a place in a block, a flat
config builds the model its blocks build, with the deprecation warning, and ``upgrade-config``
rewrites a saved flat pipeline's config into one that loads and predicts the same."""

import inspect
import shutil
import warnings
from pathlib import Path

import pytest
import spacy
from spacy.util import registry
from thinc.api import Config

from spacy_nested_mrc.cli import main
from spacy_nested_mrc.models.upgrade import (
    ARCHITECTURE_KEY,
    FLAT_TO_BLOCKS,
    config_path,
    to_blocks,
)

SAVED = Path(__file__).parents[1] / "data" / "saved" / "a38d5ea"


@pytest.mark.parametrize("flat", sorted(FLAT_TO_BLOCKS))
def test_every_flat_setting_has_a_place_in_a_block(flat):
    """Each setting of a v1 architecture (but ``mixed_precision``, read into ``precision``)
    goes to a setting of its successor or of one of its blocks, and no two go to the same."""
    successor, where, blocks = FLAT_TO_BLOCKS[flat]
    flat_settings = set(inspect.signature(registry.architectures.get(flat)).parameters)
    assert flat_settings - {"mixed_precision"} == set(where)
    assert len(set(where.values())) == len(where)
    new = inspect.signature(registry.architectures.get(successor)).parameters
    for block, setting in where.values():
        if block is None:
            assert setting in new
        else:
            assert block in new and block in blocks
            assert setting in inspect.signature(registry.misc.get(blocks[block])).parameters


def test_to_blocks_and_config_path():
    flat = {ARCHITECTURE_KEY: "spacy-nested-mrc.MRCQuery.v1", "max_length": 128,
            "start_threshold": 0.3, "per_label_loss": 0.5, "mixed_precision": True}
    blocks = to_blocks(flat)
    assert blocks[ARCHITECTURE_KEY] == "spacy-nested-mrc.MRCQuery.v2"
    assert blocks["windows"] == {"@misc": "spacy-nested-mrc.QueryWindows.v1",
                                 "window_wordpieces": 128}
    assert blocks["decoder"]["start_threshold"] == 0.3 and blocks["per_label_loss"] == 0.5
    assert blocks["encoder"]["precision"] == "fp16"  # what mixed_precision = true meant
    assert config_path(flat, "decoder.start_threshold") == "start_threshold"
    assert config_path(blocks, "decoder.start_threshold") == "decoder.start_threshold"
    with pytest.raises(ValueError, match="NME016.*no_such_setting"):
        to_blocks({**flat, "no_such_setting": 1})


@pytest.mark.parametrize("name", ["mrc_packed", "multi_ner", "locate_label"])
def test_a_saved_flat_pipeline_warns_and_its_upgraded_config_predicts_the_same(name, tmp_path):
    """The release before the blocks saved flat configs: they load with NMW015, and
    ``upgrade-config`` writes a config in blocks with which the same weights predict the
    same spans and scores, without the warning."""
    texts = ["IL-2 gene expression in human T cells", "Jurkat cells express c-fos mRNA"]
    with pytest.warns(UserWarning, match="NMW015"):
        flat = spacy.load(SAVED / name)
    folder = tmp_path / name
    shutil.copytree(SAVED / name, folder)
    assert main(["upgrade-config", str(SAVED / name / "config.cfg"),
                 str(folder / "config.cfg")]) == 0
    model = Config().from_disk(folder / "config.cfg")["components"]["nested_mrc_ner"]["model"]
    assert model[ARCHITECTURE_KEY] == FLAT_TO_BLOCKS[
        flat.config["components"]["nested_mrc_ner"]["model"][ARCHITECTURE_KEY]][0]
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        warnings.filterwarnings("ignore", message=".*W\\d{3}")  # spaCy's own
        upgraded = spacy.load(folder)
    for a, b in zip(flat.pipe(texts), upgraded.pipe(texts)):
        got = [(s.start, s.end, s.label_) for s in b.spans["nested"]]
        assert [(s.start, s.end, s.label_) for s in a.spans["nested"]] == got
        assert list(a.spans["nested"].attrs["scores"]) == pytest.approx(
            list(b.spans["nested"].attrs["scores"]), abs=1e-6)


def test_upgrading_a_partial_flat_config_builds_the_same_model(tmp_path):
    """A flat config that leaves settings out gets, in blocks, the defaults it had where the
    blocks' differ (MultiNER.v1: natural questions, one sequence per label, 64 rows)."""
    path = tmp_path / "multi_ner.cfg"
    path.write_text('[components]\n\n[components.nested_mrc_ner]\nfactory = "nested_mrc_ner"\n\n'
                    '[components.nested_mrc_ner.model]\n'
                    '@architectures = "spacy-nested-mrc.MultiNER.v1"\nencoder = "x"\n')
    assert main(["upgrade-config", str(path), str(tmp_path / "upgraded.cfg")]) == 0
    old = Config().from_disk(path)["components"]["nested_mrc_ner"]["model"]
    new = Config().from_disk(tmp_path / "upgraded.cfg")["components"]["nested_mrc_ner"]["model"]
    with pytest.warns(UserWarning, match="NMW015"):
        flat_model = registry.resolve(Config({"m": old}))["m"]
    model = registry.resolve(Config({"m": new}))["m"]
    for key in ("query_settings", "docs_per_pass", "typed", "task_weights"):
        assert model.attrs[key] == flat_model.attrs[key], key
    assert model.attrs["settings"] == flat_model.attrs["settings"]
    assert model.attrs["query_settings"]["style"] == "natural"


@pytest.mark.parametrize("text,code", [
    ("", "NME018"),  # an empty file
    ('[nlp]\nlang = "en"\n', "NME018"),  # no components
    ("[components\nmodel = 1\n", "NME017"),  # not a config
])
def test_upgrade_config_refuses_what_is_not_a_pipelines_config(text, code, tmp_path, capsys):
    (tmp_path / "in.cfg").write_text(text)
    assert main(["upgrade-config", str(tmp_path / "in.cfg"), str(tmp_path / "out.cfg")]) == 1
    assert code in capsys.readouterr().err
    assert not (tmp_path / "out.cfg").exists()
    if code == "NME017":  # adapt reads its config the same way
        assert main(["adapt", str(tmp_path / "in.cfg"), str(tmp_path / "adapted")]) == 1
        assert "NME017" in capsys.readouterr().err
