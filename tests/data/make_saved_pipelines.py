"""Write the pipelines that ``tests/runtime/test_saved_pipelines.py`` loads: a tiny random BERT, the
MRC (packed), Multi-NER and Locate-and-Label pipes trained a few steps on toy examples, saved
with their predictions on a few texts. Run it with the release whose pipelines must keep
loading (the output folder is named by its commit):

    python tests/data/make_saved_pipelines.py tests/data/saved/COMMIT
"""
import inspect
import json
import sys
from pathlib import Path
from tempfile import TemporaryDirectory

import spacy
from spacy.tokens import Span
from spacy.training import Example
from spacy.util import fix_random_seed, registry

from spacy_nested_mrc.models.upgrade import ARCHITECTURE_KEY, to_blocks

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from helpers.encoders import make_tiny_bert  # noqa: E402

TRAIN = [
    ("IL-2 gene expression", [(0, 2, "DNA"), (0, 1, "protein")]),
    ("human T cells bind", [(0, 3, "cell_type"), (1, 3, "cell_type")]),
    ("Jurkat cells express IL-2", [(0, 2, "cell_line"), (3, 4, "protein")]),
    ("binding of the kinase", []),
]
TEXTS = ["IL-2 gene expression in human T cells", "Jurkat cells express c-fos mRNA"]
MODELS = {
    # the factory's default model, as the release before the blocks merged it
    "mrc_packed": {"@architectures": "spacy-nested-mrc.MRCQuery.v1", "query_style": "index",
                   "packed": True, "per_label_loss": 0.5, "max_rows": 160, "match_hidden": 32,
                   "dropout": 0.0, "match_candidates": "all", "boundary_prior": 0.0},
    "multi_ner": {"@architectures": "spacy-nested-mrc.MultiNER.v1", "query_style": "pseudo",
                  "match_hidden": 32, "dropout": 0.0, "attention_heads": 2,
                  "match_candidates": "all", "boundary_prior": 0.0},
    "locate_label": {"@architectures": "spacy-nested-mrc.LocateAndLabel.v1", "dropout": 0.0,
                     "hidden_width": 32, "window_sizes": [1, 2, 3]},
}


def in_blocks(settings: dict) -> dict:
    """``settings`` (a flat model config of a v1 architecture), with the v1 defaults of the
    settings it leaves out, as the config in blocks of its ``.v2`` successor."""
    function = registry.architectures.get(settings[ARCHITECTURE_KEY])
    defaults = {key: param.default
                for key, param in inspect.signature(function).parameters.items()
                if param.default is not inspect.Parameter.empty}
    return to_blocks({**defaults, **settings})


def tok2vec(encoder: str) -> dict:
    """Locate-and-Label's own transformer (no shared pipe)."""
    return {
        "@architectures": "spacy-transformers.Tok2VecTransformer.v3",
        "name": encoder,
        "tokenizer_config": {"use_fast": True},
        "get_spans": {"@span_getters": "spacy-transformers.strided_spans.v1", "window": 64,
                      "stride": 48},
        "pooling": {"@layers": "reduce_mean.v1"},
    }


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with TemporaryDirectory() as tmp:
        encoder = str(make_tiny_bert(Path(tmp) / "tiny_bert"))
        predictions = {"texts": TEXTS, "pipelines": {}}
        for name, model in MODELS.items():
            fix_random_seed(0)
            nlp = spacy.blank("en")
            model = {**model, "encoder": encoder}
            if name == "locate_label":
                model["tok2vec"] = tok2vec(model.pop("encoder"))
            # the models are written with the flat settings of v1 and saved in blocks
            nlp.add_pipe("nested_mrc_ner", config={"model": in_blocks(model), "threshold": 0.2})
            examples = []
            for text, spans in TRAIN:
                doc = nlp.make_doc(text)
                ref = doc.copy()
                ref.spans["nested"] = [Span(ref, s, e, label) for s, e, label in spans]
                examples.append(Example(doc, ref))
            optimizer = nlp.initialize(lambda examples=examples: examples)
            for _ in range(30):
                nlp.update(examples, sgd=optimizer, drop=0.0)
            nlp.to_disk(out / name)
            predictions["pipelines"][name] = [
                [[s.start, s.end, s.label_, float(p)]
                 for s, p in zip(doc.spans["nested"], doc.spans["nested"].attrs["scores"])]
                for doc in nlp.pipe(TEXTS)
            ]
        (out / "predictions.json").write_text(json.dumps(predictions, indent=1))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
