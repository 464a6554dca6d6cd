"""The contract between the pipe and its model (``spacy_nested_mrc.types``): a model declares a
``ModelContract``; each layer's config-governed settings are a frozen dataclass in
``attrs["settings"]``, which a saved pipeline never holds, so a loaded pipeline follows its
config."""

import dataclasses

import pytest
import spacy
from helpers.contract import ARCHITECTURES, build
from helpers.pipes import PIPE
from spacy.util import registry
from thinc.api import Model

from spacy_nested_mrc.types import CONTRACT, SETTINGS, ModelContract, contract_of


@registry.architectures("test.model_without_contract.v1")
def model_without_contract() -> Model:
    return Model("no_contract", lambda model, X, is_train: (X, lambda dY: dY), attrs={"labels": []})


def test_a_model_without_a_contract_is_refused_when_added():
    nlp = spacy.blank("en")
    with pytest.raises(ValueError, match="NME015"):
        nlp.add_pipe(PIPE, config={"model": {"@architectures": "test.model_without_contract.v1"}})


@pytest.mark.parametrize("kind", ARCHITECTURES)
def test_contract_and_settings_of_each_architecture(kind, tiny_bert, tmp_path):
    model = build(kind, tiny_bert, tmp_path).get_pipe(PIPE).model
    contract = contract_of(model)
    assert isinstance(contract, ModelContract)
    assert set(contract.decode_settings) == {"gates", "score_cuts"}
    holders = [node for node in model.walk() if SETTINGS in node.attrs]
    # the model itself (or its Locate-and-Label part), its heads and, where the model owns
    # its encoder, the encoder's prediction layer
    assert len(holders) >= 2
    for node in holders:
        settings = node.attrs[SETTINGS]
        assert dataclasses.is_dataclass(settings)
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(settings, dataclasses.fields(settings)[0].name, None)
    # what thinc writes: learned attrs only, never the contract or a layer's settings
    saved_attrs = model.to_dict()["attrs"]
    assert any("labels" in attrs for attrs in saved_attrs)
    assert not any(CONTRACT in attrs or SETTINGS in attrs for attrs in saved_attrs)
