"""Gold data with a pipeline's predictions: the examples that scoring, tuning and the
evaluation report take."""

from pathlib import Path

from spacy.language import Language
from spacy.training import Example

from ..corpora.jsonl import create_jsonl_reader
from ..types import DEFAULT_SPANS_KEY


def predict_examples(
    nlp: Language,
    path: str | Path,
    spans_key: str = DEFAULT_SPANS_KEY,
    *,
    limit: int = 0,
    gold_preproc: bool = False,
    batch_size: int = 64,
) -> list[Example]:
    """Read gold data with ``create_jsonl_reader`` (the text through ``nlp``'s tokenizer,
    or the file's tokens with ``gold_preproc``) and run ``nlp`` on the predicted docs.

    RETURNS (List[Example]): the annotated predicted docs paired with the gold ones.
    """
    examples = list(create_jsonl_reader(Path(path), spans_key, limit,
                                        gold_preproc=gold_preproc)(nlp))
    predicted = nlp.pipe((eg.predicted for eg in examples), batch_size=batch_size)
    return [Example(doc, eg.reference) for doc, eg in zip(predicted, examples)]
