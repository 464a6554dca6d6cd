"""``average`` (``training/averaging.py``): trained pipelines averaged parameter by parameter.
The result must hold the weighted mean of every trained parameter (torch modules of the pipe
and of a shared ``transformer`` component alike), save and load as any pipeline, and refuse
pipelines that cannot be averaged with a code."""

import pytest
import spacy
import torch
from helpers.locate_label import encoder_of, initialized_shipped
from helpers.pipes import PIPE, TRAIN, initialized_nlp, torch_weights

from spacy_nested_mrc.cli import main
from spacy_nested_mrc.training.averaging import average_loaded, average_pipelines

TEXTS = [text for text, _ in TRAIN[:3]]


def mrc_pipeline(encoder, tmp_path):
    return initialized_nlp(encoder)


def locate_label_pipeline(encoder: str, tmp_path):
    return initialized_shipped(encoder, tmp_path)


def moved(nlp, seed: int):
    """``nlp`` with every torch parameter moved by noise of its own (a run of another seed)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for param in torch_weights(nlp).values():
            param.add_(0.05 * torch.randn(param.shape, generator=generator))
    return nlp


def values(nlp):
    return [param.detach().clone() for param in torch_weights(nlp).values()]


def spans_and_scores(nlp):
    return [[(s.start, s.end, s.label_, round(float(score), 5))
             for s, score in zip(doc.spans["nested"], doc.spans["nested"].attrs["scores"])]
            for doc in nlp.pipe(TEXTS)]


@pytest.mark.parametrize("build", [mrc_pipeline, locate_label_pipeline])
def test_average_is_the_weighted_mean_of_every_parameter(tiny_bert, tmp_path, build):
    first = moved(build(tiny_bert, tmp_path), seed=1)
    first.to_disk(tmp_path / "a")
    second = moved(first, seed=2)
    second.to_disk(tmp_path / "b")
    a = values(spacy.load(tmp_path / "a"))
    b = values(spacy.load(tmp_path / "b"))
    assert len(a) > 0 and not all(torch.equal(x, y) for x, y in zip(a, b))

    averaged = average_pipelines([tmp_path / "a", tmp_path / "b"], weights=[3, 1])
    for x, y, mean in zip(a, b, values(averaged)):
        assert torch.allclose(mean, 0.75 * x + 0.25 * y, atol=1e-6)
    if build is locate_label_pipeline:  # the encoder's own weights are averaged
        encoder = {s.id for n in encoder_of(averaged).walk() for s in n.shims}
        assert any(key[0] in encoder for key in torch_weights(averaged))
    assert "averaged" in averaged.meta["notes"] and averaged.meta["performance"] == {}

    averaged.to_disk(tmp_path / "mean")
    loaded = spacy.load(tmp_path / "mean")
    assert spans_and_scores(loaded) == spans_and_scores(averaged)
    assert all(torch.equal(x, y) for x, y in zip(values(loaded), values(averaged)))


def test_equal_weights_are_the_default(tiny_bert, tmp_path):
    nlp = moved(initialized_nlp(tiny_bert), seed=1)
    nlp.to_disk(tmp_path / "a")
    moved(nlp, seed=2).to_disk(tmp_path / "b")
    a, b = (values(spacy.load(tmp_path / name)) for name in ("a", "b"))
    averaged = values(average_pipelines([tmp_path / "a", tmp_path / "b"]))
    assert all(torch.allclose(m, (x + y) / 2, atol=1e-6) for x, y, m in zip(a, b, averaged))


def test_pipelines_that_cannot_be_averaged_are_refused_with_a_code(tiny_bert, tmp_path):
    initialized_nlp(tiny_bert).to_disk(tmp_path / "a")
    initialized_nlp(tiny_bert, labels=("DNA", "protein")).to_disk(tmp_path / "labels")
    other_pipes = initialized_nlp(tiny_bert)
    other_pipes.add_pipe("sentencizer", first=True)
    other_pipes.to_disk(tmp_path / "pipes")
    initialized_nlp(tiny_bert, model={"heads": {"match_hidden": 16}}).to_disk(tmp_path / "shape")
    with pytest.raises(ValueError, match="NME232.*two or more"):
        average_pipelines([tmp_path / "a"])
    with pytest.raises(ValueError, match="NME232.*labels"):
        average_pipelines([tmp_path / "a", tmp_path / "labels"])
    with pytest.raises(ValueError, match="NME232.*pipes"):
        average_pipelines([tmp_path / "a", tmp_path / "pipes"])
    with pytest.raises(ValueError, match="NME232.*shape|NME232.*parameters"):
        average_pipelines([tmp_path / "a", tmp_path / "shape"])
    for weights in ([1.0], [1.0, 0.0], [1.0, -1.0]):
        with pytest.raises(ValueError, match="NME233"):
            average_pipelines([tmp_path / "a", tmp_path / "a"], weights=weights)


def test_layers_whose_torch_models_differ_in_number_are_refused(tiny_bert):
    """A layer with a torch model more or fewer in one pipeline is named, not skipped."""
    first, second = initialized_nlp(tiny_bert), initialized_nlp(tiny_bert)
    node = next(n for n in second.get_pipe(PIPE).model.walk() if n.shims)
    node.shims.append(node.shims[0])
    with pytest.raises(ValueError, match=f"NME232.*layer '{node.name}'.*shims"):
        average_loaded([first, second], [0.5, 0.5], ["first", "second"])
    node.shims.pop()
    node.shims[0] = object()  # as many, but one is no torch model
    with pytest.raises(ValueError, match="NME232.*torch model in some"):
        average_loaded([first, second], [0.5, 0.5], ["first", "second"])


def test_average_command_saves_a_pipeline_or_says_why_not(tiny_bert, tmp_path, capsys):
    nlp = moved(initialized_nlp(tiny_bert), seed=1)
    nlp.to_disk(tmp_path / "a")
    moved(nlp, seed=2).to_disk(tmp_path / "b")
    code = main(["average", str(tmp_path / "a"), str(tmp_path / "b"),
                 "--output", str(tmp_path / "mean"), "--weights", "1,1"])
    assert code == 0 and "tune" in capsys.readouterr().out
    assert spacy.load(tmp_path / "mean").get_pipe(PIPE).labels == nlp.get_pipe(PIPE).labels
    assert main(["average", str(tmp_path / "a"), "--output", str(tmp_path / "one")]) == 1
    assert "NME232" in capsys.readouterr().err and not (tmp_path / "one").exists()
