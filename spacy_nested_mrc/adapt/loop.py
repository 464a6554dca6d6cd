"""The adaptation loop: masked-language-model steps over the streamed text, the held-out loss
every ``eval_every`` steps, a checkpoint every ``checkpoint_every`` steps, and a resume that
gives the weights an uninterrupted run gives.

Every step is a function of the settings and the step's number alone: its batch is the
``step``-th of the text's sequence stream, its masks come from a generator seeded with
(seed, step) and its dropout from torch's generator seeded the same way, so a resumed run
re-reads the text up to its step and goes on exactly as the killed one would have.

Output folder::

    OUTPUT/encoder/          the adapted encoder (weights and tokenizer, no LM head): paths.encoder
    OUTPUT/checkpoint.pt     model with head, optimizer and schedule at the last checkpoint
    OUTPUT/adapt.json        the settings, the held-out losses, the cost, what the text held
"""
import json
import math
import os
import time
from dataclasses import asdict, dataclass, field
from itertools import islice
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional

import numpy
import torch

from ..errors import Errors
from ..runtime.memory import limit_onednn_cache, peak_rss_mb, release_free_memory
from ..runtime.precision import autocast, check_precision, compute_dtype
from .masking import collate, mask_sequence
from .model import load_masked_lm, masked_lm_loss, save_encoder
from .settings import AdaptSettings
from .text import Sequence, TextReport, iter_sequences

CHECKPOINT = "checkpoint.pt"
SUMMARY = "adapt.json"
ENCODER = "encoder"


@dataclass
class StepInfo:
    """What a step reports to ``on_step``.

    step (int): steps done. loss (Optional[float]): the step's masked-token loss; None in
    the report before the first step, which gives the held-out loss of the encoder as it
    came. epoch (int): passes over the text begun. words (int): words trained on so far.
    seconds (float): time spent on steps in this run. held_out (Optional[float]): the
    held-out loss, on steps that measure it.
    """

    step: int
    loss: Optional[float]
    epoch: int
    words: int
    seconds: float
    held_out: Optional[float] = None


@dataclass
class AdaptResult:
    """What an adaptation did (written as ``adapt.json``)."""

    settings: Dict[str, Any]
    steps: int = 0
    words: int = 0
    epochs: int = 0
    seconds: float = 0.0
    new_head: List[str] = field(default_factory=list)
    held_out: List[Dict[str, float]] = field(default_factory=list)
    text: Dict[str, Any] = field(default_factory=dict)
    held_out_text: Dict[str, Any] = field(default_factory=dict)
    resumed_from: int = 0
    peak_rss_mb: float = 0.0
    device: str = "cpu"

    @property
    def seconds_per_million_words(self) -> Optional[float]:
        return self.seconds / self.words * 1e6 if self.words else None

    def to_dict(self) -> Dict[str, Any]:
        return {**asdict(self), "seconds_per_million_words": self.seconds_per_million_words}


class TrainingStream:
    """The training sequences of a step, in order, the text read again from its start when
    it ends (the held-out sequences set apart when they come from the text itself).
    ``report`` is what the first pass over the text met (warned once, NMW180, when the pass
    ends or the run does)."""

    def __init__(self, settings: AdaptSettings, tokenizer: Any) -> None:
        self.settings = settings
        self.tokenizer = tokenizer
        self.epoch = 0
        self.report = TextReport()
        self._sequences = self._forever()

    def _forever(self) -> Iterator[Sequence]:
        settings = self.settings
        skip = settings.held_out_sequences if settings.held_out is None else 0
        while True:
            self.epoch += 1
            report = self.report if self.epoch == 1 else TextReport(warned=True)
            found = 0
            sequences = islice(iter_sequences(settings, self.tokenizer, settings.text, report),
                               skip, None)
            rng = numpy.random.default_rng([settings.seed, 2, self.epoch])
            for sequence in shuffled(sequences, settings.shuffle_buffer, rng):
                found += 1
                yield sequence
            if not report.warned:
                report.warn(settings.text)
            if not found:
                note = f" after the {skip} held-out sequences" if skip else ""
                raise ValueError(Errors.NME177.format(path=settings.text, skip_note=note))

    def take(self, count: int) -> List[Sequence]:
        return [next(self._sequences) for _ in range(count)]


def shuffled(items: Iterator[Sequence], size: int, rng: numpy.random.Generator
             ) -> Iterator[Sequence]:
    """``items`` in an order shuffled within a buffer of ``size`` (1: as they come), so that
    a text of several sources mixes them without being read whole."""
    buffer: List[Sequence] = []
    for item in items:
        buffer.append(item)
        if len(buffer) >= size:
            index = int(rng.integers(len(buffer)))
            buffer[index], buffer[-1] = buffer[-1], buffer[index]
            yield buffer.pop()
    while buffer:
        index = int(rng.integers(len(buffer)))
        buffer[index], buffer[-1] = buffer[-1], buffer[index]
        yield buffer.pop()


def held_out_sequences(settings: AdaptSettings, tokenizer: Any, report: TextReport
                       ) -> List[Sequence]:
    source = settings.held_out or settings.text
    found = list(islice(iter_sequences(settings, tokenizer, source, report),
                        settings.held_out_sequences))
    if not found:
        raise ValueError(Errors.NME177.format(path=source, skip_note=""))
    return found


def adapt_encoder(settings: AdaptSettings, output: Path, *, resume: bool = False,
                  device: str = "cpu", on_step: Optional[Callable[[StepInfo], None]] = None
                  ) -> AdaptResult:
    """Continue the masked-language-model pretraining of ``settings.encoder`` on
    ``settings.text`` and write the adapted encoder to ``output / "encoder"``.

    output (Path): the output folder (created).
    resume (bool): go on from ``output``'s checkpoint; without it, a folder that holds one
        is refused (NME178).
    device (str): "cpu" or "cuda:N".
    on_step (Optional[Callable[[StepInfo], None]]): called after every step (progress), and
        once before the first (step 0, the held-out loss of the encoder as it came).
    RETURNS (AdaptResult): what was done, also written to ``output / "adapt.json"``.
    """
    from ..encoder.hf import resolve_encoder

    output = Path(output)
    checkpoint_path = output / CHECKPOINT
    if checkpoint_path.exists() and not resume:
        raise ValueError(Errors.NME178.format(path=output))
    if resume and not checkpoint_path.exists():
        raise FileNotFoundError(Errors.NME179.format(path=output))
    output.mkdir(parents=True, exist_ok=True)
    torch_device = torch.device(device)
    dtype = compute_dtype(settings.precision, torch_device.type)
    check_precision(settings.precision, torch_device.type)
    if settings.onednn_cache is not None and torch_device.type == "cpu":
        limit_onednn_cache(settings.onednn_cache)  # before the first bf16 product
    torch.manual_seed(settings.seed)  # the new head's initial weights
    model, tokenizer, new_head = load_masked_lm(resolve_encoder(settings.encoder))
    model.to(torch_device)
    optimizer = torch.optim.AdamW(_parameter_groups(model, settings.weight_decay),
                                  lr=settings.learn_rate)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda step: _rate(settings, step))
    scaler = torch.amp.GradScaler(torch_device.type, enabled=dtype == torch.float16)
    result = AdaptResult(settings=asdict(settings), new_head=new_head, device=str(torch_device))
    if resume:
        state = torch.load(checkpoint_path, map_location=torch_device, weights_only=True)
        if state["settings"] != settings.identity():
            changed = sorted(k for k, v in settings.identity().items()
                             if state["settings"].get(k) != v)
            raise ValueError(Errors.NME180.format(path=output, changed=", ".join(changed)))
        model.load_state_dict(state["model"])
        optimizer.load_state_dict(state["optimizer"])
        schedule.load_state_dict(state["schedule"])
        scaler.load_state_dict(state["scaler"])
        result = AdaptResult(**{**state["result"], "new_head": new_head})
        result.resumed_from = result.steps
    held_report = TextReport()
    held_out = held_out_sequences(settings, tokenizer, held_report)
    result.held_out_text = held_report.to_dict()
    if settings.held_out is not None:
        held_report.warn(settings.held_out)
    stream = TrainingStream(settings, tokenizer)
    stream.take(result.steps * settings.batch_size)  # what the checkpointed steps read
    mask_id, pad_id = tokenizer.mask_token_id, tokenizer.pad_token_id or 0
    vocab_size = len(tokenizer)
    if mask_id is None:
        raise ValueError(Errors.NME174.format(encoder=settings.encoder))
    if not result.held_out:  # the encoder as it came: what the adaptation is measured against
        before = held_out_loss(model, held_out, settings, tokenizer, torch_device)
        _record_held_out(result, before)
        if on_step is not None:
            on_step(StepInfo(0, None, stream.epoch, result.words, result.seconds, before))
    started = time.perf_counter()
    spent_before = result.seconds
    while result.steps < settings.max_steps:
        step = result.steps
        batch = stream.take(settings.batch_size)
        rng = numpy.random.default_rng([settings.seed, 0, step])
        pairs = [mask_sequence(seq, settings, rng, mask_id, vocab_size) for seq in batch]
        ids, attention, labels = (t.to(torch_device) for t in collate(pairs, pad_id))
        torch.manual_seed(settings.seed * 1_000_003 + step)  # the step's dropout
        model.train()
        with autocast(settings.precision, torch_device.type):
            loss, _ = masked_lm_loss(model, ids, attention, labels)
        scaler.scale(loss).backward()
        if settings.grad_clip:
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), settings.grad_clip)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        schedule.step()
        result.steps += 1
        if settings.release_memory_every and result.steps % settings.release_memory_every == 0:
            release_free_memory()
        result.words += sum(seq.words for seq in batch)
        result.epochs = max(result.epochs, stream.epoch)
        result.seconds = spent_before + time.perf_counter() - started
        info = StepInfo(result.steps, float(loss.detach()), stream.epoch, result.words,
                        result.seconds)
        last = result.steps == settings.max_steps
        if result.steps % settings.eval_every == 0 or last:
            info.held_out = held_out_loss(model, held_out, settings, tokenizer, torch_device)
            _record_held_out(result, info.held_out)
        result.text = stream.report.to_dict()
        result.peak_rss_mb = max(result.peak_rss_mb, peak_rss_mb())
        if result.steps % settings.checkpoint_every == 0 or last:
            _save_checkpoint(checkpoint_path, model, optimizer, schedule, scaler, settings,
                             result)
        if on_step is not None:
            on_step(info)
    if not stream.report.warned:  # a run shorter than a pass: what it read
        stream.report.warn(settings.text)
    save_encoder(model, tokenizer, output / ENCODER)
    _write_json(output / SUMMARY, result.to_dict())
    return result


def held_out_loss(model: torch.nn.Module, sequences: List[Sequence], settings: AdaptSettings,
                  tokenizer: Any, device: torch.device) -> float:
    """The mean masked-token loss over the held-out sequences, under masks that are the same
    at every measurement (seeded by the settings' seed), without dropout."""
    rng = numpy.random.default_rng([settings.seed, 1])
    pairs = [mask_sequence(seq, settings, rng, tokenizer.mask_token_id, len(tokenizer))
             for seq in sequences]
    total, count = 0.0, 0
    model.eval()
    with torch.inference_mode(), autocast(settings.precision, device.type):
        for start in range(0, len(pairs), settings.batch_size):
            ids, attention, labels = (t.to(device) for t in collate(
                pairs[start : start + settings.batch_size], tokenizer.pad_token_id or 0))
            loss, n = masked_lm_loss(model, ids, attention, labels)
            total += float(loss) * n
            count += n
    model.train()
    return total / max(count, 1)


def _record_held_out(result: AdaptResult, loss: float) -> None:
    result.held_out.append({"step": result.steps, "loss": loss,
                            "perplexity": math.exp(min(loss, 50.0))})


def _rate(settings: AdaptSettings, step: int) -> float:
    """The learning rate's factor at ``step``: linear warm-up, then linear decay to 0."""
    if step < settings.warmup_steps:
        return (step + 1) / (settings.warmup_steps + 1)
    rest = settings.max_steps - settings.warmup_steps
    return max(0.0, (settings.max_steps - step) / max(rest, 1))


def _parameter_groups(model: torch.nn.Module, weight_decay: float) -> List[Dict[str, Any]]:
    """AdamW's groups: weight decay on the weight matrices, none on biases and layer norms
    (tied weights listed once)."""
    decay, plain, seen = [], [], set()
    for name, param in model.named_parameters():
        if id(param) in seen or not param.requires_grad:
            continue
        seen.add(id(param))
        (plain if param.ndim < 2 or "norm" in name.lower() else decay).append(param)
    return [{"params": decay, "weight_decay": weight_decay},
            {"params": plain, "weight_decay": 0.0}]


def _save_checkpoint(path: Path, model: torch.nn.Module, optimizer: torch.optim.Optimizer,
                     schedule: Any, scaler: Any, settings: AdaptSettings,
                     result: AdaptResult) -> None:
    """Write the checkpoint whole or not at all (a temporary file renamed over the last)."""
    state = {"model": model.state_dict(), "optimizer": optimizer.state_dict(),
             "schedule": schedule.state_dict(), "scaler": scaler.state_dict(),
             "settings": settings.identity(), "result": asdict(result)}
    temporary = path.with_name(path.name + ".tmp")
    torch.save(state, temporary)
    os.replace(temporary, path)


def _write_json(path: Path, value: Dict[str, Any]) -> None:
    temporary = path.with_name(path.name + ".tmp")
    temporary.write_text(json.dumps(value, indent=2) + "\n", encoding="utf8")
    os.replace(temporary, path)
