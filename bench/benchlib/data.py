"""GENIA JSON Lines (one sentence a line, ``tokens`` and ``doc``) read as the studies need it:
sentence texts, records, or abstracts."""
import json
from pathlib import Path
from typing import Any, Dict, List


def read_texts(path: str, limit: int) -> List[str]:
    import srsly

    texts = []
    for record in srsly.read_jsonl(path):
        texts.append(" ".join(record["tokens"]))
        if len(texts) == limit:
            break
    return texts


def read_records(path: str) -> List[Dict[str, Any]]:
    """The sentence records of a JSONL file, in order."""
    return [json.loads(line) for line in Path(path).read_text().splitlines() if line.strip()]


def abstracts(dev: str) -> List[str]:
    """GENIA dev sentences joined into abstracts by their ``doc`` field, in order."""
    joined: List[List[str]] = []
    previous = object()
    with open(dev, encoding="utf8") as f:
        for line in f:
            record = json.loads(line)
            if record.get("doc") != previous:
                joined.append([])
                previous = record.get("doc")
            joined[-1].append(" ".join(record["tokens"]))
    return [" ".join(sentences) for sentences in joined]
