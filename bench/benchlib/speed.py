"""Timing: the bare encoder (the floor of any pipeline on it), pipelines beside it in
interleaved rounds, runs in turn, and the options every speed study takes."""
import argparse
import time
from typing import Any, Callable, Dict, List, Optional

import numpy as np

from benchlib.pipelines import bare_copies


def add_speed_arguments(parser: argparse.ArgumentParser, sentences: int = 200,
                        rounds: int = 2) -> None:
    """The options of a speed benchmark (label_speed, version_speed, onnx_int8): the encoder,
    how many dev sentences, the batch size, timing rounds, torch threads, the output prefix."""
    parser.add_argument("--encoder", default="sentence-transformers/all-MiniLM-L6-v2")
    parser.add_argument("--sentences", type=int, default=sentences)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=rounds)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", default=None)


def bare_encoder(name: str, quantize: bool = False, by_length: bool = False,
                 precision: str = "fp32", attention: str = "auto", pass_tokens: int = 0):
    """The encoder alone, with its own tokenizer, on the sentences (no question, no heads);
    with ``quantize``, its linear layers in int8 as the pipe's ``quantize = "int8"``. With
    ``by_length`` the sentences are sorted by length before batching, as sentence-
    transformers' ``encode`` does, and run under ``torch.inference_mode``: the true floor of
    any pipeline on this encoder; without, batches in input order (the older, slower
    reference, named "unsorted" where it is reported). ``precision`` "bf16": under bf16
    autocast, as the pipes' ``precision = "bf16"`` runs it. ``attention``: its attention
    implementation, as the pipes' encoder setting of that name (on a CPU "auto" is eager, the
    faster there: the floor). ``pass_tokens`` > 0 (with ``by_length``): a batch is cut into
    calls of at most that many padded wordpieces, as the pipes' ``max_pass_tokens`` cuts
    theirs, so the floor is the encoder in the pipes' own call shapes."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    from spacy_nested_mrc.encoder.hf import attention_implementation, resolve_encoder
    from spacy_nested_mrc.encoder.passes import prediction_passes

    tokenizer = AutoTokenizer.from_pretrained(resolve_encoder(name))
    implementation = attention_implementation(attention, "cpu")
    settings = {"attn_implementation": implementation} if implementation else {}
    transformer = AutoModel.from_pretrained(resolve_encoder(name), **settings).eval()
    if quantize:  # imported here only: version_speed.py times releases without the module
        from spacy_nested_mrc.encoder.quantization import quantize_module

        quantize_module(transformer)

    def run(docs, batch_size: int) -> None:
        words = [[t.text for t in d] for d in docs]
        if by_length:
            lengths = [len(w) for w in tokenizer(words, is_split_into_words=True)["input_ids"]]
            words = [words[k] for k in sorted(range(len(words)), key=lengths.__getitem__)]
        context = torch.inference_mode() if by_length else torch.no_grad()
        cast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16")
        with context, cast:
            for i in range(0, len(words), batch_size):
                # each batch tokenized once; a call pads only its own sentences
                encoded = tokenizer(words[i : i + batch_size], is_split_into_words=True,
                                    truncation=True)
                ids, mask = encoded["input_ids"], encoded["attention_mask"]
                calls = [np.arange(len(ids))]
                if by_length and pass_tokens > 0:  # the pipes' own cut of a batch
                    calls = prediction_passes(np.asarray([len(x) for x in ids]), batch_size,
                                              pass_tokens)
                for call in calls:
                    transformer(**tokenizer.pad(
                        {"input_ids": [ids[k] for k in call],
                         "attention_mask": [mask[k] for k in call]}, return_tensors="pt"))

    return run


def throughput(pipelines, sample, encoder_name: str, batch_size: int, rounds: int,
               spans_per_sentence: Optional[Dict[str, float]] = None, bare_int8: bool = False):
    """Sentences/second of each pipeline and of the bare encoder on ``sample``, in rounds
    that interleave the systems so that machine noise hits all alike; the best round counts.

    spans_per_sentence (Optional[Dict[str, float]]): if given, filled with each pipeline's
        spans written to ``doc.spans["nested"]`` per sentence (the decoding load).
    bare_int8 (bool): also time the bare encoder with int8 linear layers.
    RETURNS (Dict[str, float]): name (and "bare_encoder") -> sentences per second.
    """
    encoders = {"bare_encoder": bare_encoder(encoder_name)}
    if bare_int8:
        encoders["bare_encoder_int8"] = bare_encoder(encoder_name, quantize=True)
    timings: Dict[str, List[float]] = {name: [] for name in [*pipelines, *encoders]}
    for nlp in pipelines.values():  # warm up
        list(nlp.pipe(bare_copies(sample[:32], nlp.vocab), batch_size=batch_size))
    for encoder in encoders.values():
        encoder(sample[:32], batch_size)
    for _ in range(rounds):
        for name, nlp in pipelines.items():
            docs = bare_copies(sample, nlp.vocab)
            n_spans = 0
            start = time.perf_counter()
            for doc in nlp.pipe(docs, batch_size=batch_size):
                n_spans += len(doc.spans.get("nested", []))
            timings[name].append(time.perf_counter() - start)
            if spans_per_sentence is not None:
                spans_per_sentence[name] = round(n_spans / len(sample), 2)
        for name, encoder in encoders.items():
            start = time.perf_counter()
            encoder(sample, batch_size)
            timings[name].append(time.perf_counter() - start)
    return {name: len(sample) / min(times) for name, times in timings.items()}


def timed(run: Callable[[], Any]) -> float:
    start = time.perf_counter()
    run()
    return time.perf_counter() - start


def interleaved(runs: Dict[str, Callable[[], Any]], repeats: int, warm_up: bool = True
                ) -> Dict[str, List[float]]:
    """Each run once to warm up (unless the caller already ran them), then all of them in
    turn ``repeats`` times (so a noisy machine slows them alike). RETURNS: per run, its
    seconds each time."""
    for run in runs.values() if warm_up else ():
        run()
    seconds: Dict[str, List[float]] = {label: [] for label in runs}
    for _ in range(repeats):
        for label, run in runs.items():
            seconds[label].append(timed(run))
    return seconds
