"""The encoder on CPU four ways, side by side in one process: torch float32, torch int8
(dynamic quantization of the linear layers, what ``quantize = "int8"`` does), ONNX Runtime
float32 and ONNX Runtime int8 (its own dynamic quantization of the exported graph). The
encoder is the cost of inference on CPU, so this says which int8 route to take.

    pip install onnxruntime onnx     # for this benchmark only; not a dependency
    python bench/onnx_int8.py ../shared/data/genia/dev.jsonl --sentences 400 --rounds 3 \
        --out bench/results/speed_cpu_minilm/onnx_int8_cpu_minilm

Batches of sentences (GENIA's tokens through the encoder's tokenizer, padded per batch), the
systems interleaved in rounds so that machine noise hits all alike; the best round counts.
Also reports how far each variant's last hidden states are from torch float32's, over the
real wordpieces (not the padding).
"""
import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Dict, List

import numpy as np
import torch
from benchlib.speed import add_speed_arguments
from transformers import AutoModel, AutoTokenizer

from spacy_nested_mrc.encoder.hf import resolve_encoder
from spacy_nested_mrc.encoder.quantization import quantize_module


def sentences(path: str, n: int) -> List[List[str]]:
    with open(path, encoding="utf8") as file_:
        return [json.loads(line)["tokens"] for line, _ in zip(file_, range(n))]


def batches(tokenizer, words: List[List[str]], size: int) -> List[Dict[str, np.ndarray]]:
    return [
        dict(tokenizer(words[i : i + size], is_split_into_words=True, padding=True,
                       truncation=True, return_tensors="np"))
        for i in range(0, len(words), size)
    ]  # fmt: skip


def torch_runner(model: torch.nn.Module) -> Callable[[Dict[str, np.ndarray]], np.ndarray]:
    def run(batch: Dict[str, np.ndarray]) -> np.ndarray:
        with torch.no_grad():
            inputs = {k: torch.from_numpy(v) for k, v in batch.items()}
            return model(**inputs).last_hidden_state.numpy()

    return run


def onnx_runner(path: Path, threads: int) -> Callable[[Dict[str, np.ndarray]], np.ndarray]:
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    names = {i.name for i in session.get_inputs()}

    def run(batch: Dict[str, np.ndarray]) -> np.ndarray:
        feed = {k: v.astype(np.int64) for k, v in batch.items() if k in names}
        return session.run(["last_hidden_state"], feed)[0]

    return run


def export(model: torch.nn.Module, batch: Dict[str, np.ndarray], path: Path) -> None:
    order = ("input_ids", "attention_mask", "token_type_ids")  # the forward's positional order
    names = [k for k in order if k in batch]
    inputs = tuple(torch.from_numpy(batch[k]) for k in names)
    axes = {k: {0: "batch", 1: "length"} for k in names}
    axes["last_hidden_state"] = {0: "batch", 1: "length"}
    torch.onnx.export(
        model, inputs, str(path), input_names=names, output_names=["last_hidden_state"],
        dynamic_axes=axes, opset_version=17, dynamo=False,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("data")
    add_speed_arguments(parser, sentences=400, rounds=3)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from onnxruntime.quantization import QuantType, quantize_dynamic

    name = resolve_encoder(args.encoder)
    tokenizer = AutoTokenizer.from_pretrained(name)
    words = sentences(args.data, args.sentences)
    data = batches(tokenizer, words, args.batch_size)
    fp32 = AutoModel.from_pretrained(name).eval()
    int8 = quantize_module(AutoModel.from_pretrained(name).eval())
    work = Path(tempfile.mkdtemp())
    export(fp32, data[0], work / "encoder.onnx")
    quantize_dynamic(str(work / "encoder.onnx"), str(work / "encoder_int8.onnx"),
                     weight_type=QuantType.QInt8)
    systems: Dict[str, Callable] = {
        "torch_fp32": torch_runner(fp32),
        "torch_int8": torch_runner(int8),
        "onnxruntime_fp32": onnx_runner(work / "encoder.onnx", args.threads),
        "onnxruntime_int8": onnx_runner(work / "encoder_int8.onnx", args.threads),
    }
    reference = [systems["torch_fp32"](b) for b in data]
    drift: Dict[str, float] = {}
    for key, run in systems.items():  # also warms every system up
        outputs = [run(b) for b in data]
        drift[key] = float(max(  # over real wordpieces (padding's states are unused)
            np.abs(o - r)[b["attention_mask"].astype(bool)].max()
            for o, r, b in zip(outputs, reference, data)
        ))
    timings: Dict[str, List[float]] = {key: [] for key in systems}
    for _ in range(args.rounds):
        for key, run in systems.items():
            start = time.perf_counter()
            for batch in data:
                run(batch)
            timings[key].append(time.perf_counter() - start)
    best = {key: min(t) for key, t in timings.items()}
    report: Dict[str, Any] = {
        "settings": vars(args),
        "sentences_per_second": {k: round(len(words) / t, 1) for k, t in best.items()},
        "x_torch_fp32": {k: round(best["torch_fp32"] / t, 2) for k, t in best.items()},
        "max_abs_diff_from_torch_fp32": drift,
        "model_mb": {
            "onnx_fp32": round((work / "encoder.onnx").stat().st_size / 2**20, 1),
            "onnx_int8": round((work / "encoder_int8.onnx").stat().st_size / 2**20, 1),
        },
        "versions": {"torch": torch.__version__,
                     "onnxruntime": __import__("onnxruntime").__version__},
        "cpu": open("/proc/cpuinfo").read().split("model name")[1].split("\n")[0].strip(": "),
    }
    lines = ["| system | sentences/s | x torch fp32 | max abs diff of hidden states |",
             "|---|---|---|---|"]
    for key in systems:
        lines.append(f"| {key} | {report['sentences_per_second'][key]} "
                     f"| {report['x_torch_fp32'][key]} | {drift[key]:.3g} |")
    context = {k: report[k] for k in ("settings", "model_mb", "versions", "cpu")}
    text = "\n".join(lines) + f"\n\n{json.dumps(context)}\n"
    print(text)
    if args.out:
        Path(f"{args.out}.json").write_text(json.dumps(report, indent=2))
        Path(f"{args.out}.md").write_text(text)


if __name__ == "__main__":
    main()
