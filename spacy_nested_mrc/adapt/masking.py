"""Whole-word masking (as in BERT's whole-word-masking release): words are chosen until about
``mask_probability`` of a sequence's wordpieces are chosen, and every wordpiece of a chosen
word is predicted; a chosen word is replaced by the mask token (``mask_token_share``), by
random wordpieces (``random_token_share``) or kept."""
from typing import List, Tuple
from typing import Sequence as Seq

import numpy
import torch

from .settings import AdaptSettings
from .text import Sequence

IGNORE = -100  # the label of a position that is not predicted (torch's cross-entropy default)


def mask_sequence(sequence: Sequence, settings: AdaptSettings, rng: numpy.random.Generator,
                  mask_id: int, vocab_size: int) -> Tuple[List[int], List[int]]:
    """One sequence's model input and labels.

    RETURNS (Tuple[List[int], List[int]]): the input wordpieces (L) with the chosen words
        replaced, and the labels (L): the original wordpiece where chosen, ``IGNORE`` elsewhere.
    """
    inputs = sequence.input_ids.tolist()
    labels = [IGNORE] * len(inputs)
    positions: List[List[int]] = [[] for _ in range(sequence.words)]
    for index, word in enumerate(sequence.word_ids.tolist()):
        if word >= 0:
            positions[word].append(index)
    pieces = sum(len(p) for p in positions)
    target = max(1, round(settings.mask_probability * pieces))
    chosen = 0
    for word in rng.permutation(sequence.words):
        if chosen >= target:
            break
        if chosen and chosen + len(positions[word]) > target + max(1, target // 2):
            continue  # a long word would overshoot the share by far: another instead
        chosen += len(positions[word])
        action = rng.random()
        for index in positions[word]:
            labels[index] = inputs[index]
            if action < settings.mask_token_share:
                inputs[index] = mask_id
            elif action < settings.mask_token_share + settings.random_token_share:
                inputs[index] = int(rng.integers(vocab_size))
    return inputs, labels


def collate(pairs: Seq[Tuple[List[int], List[int]]], pad_id: int
            ) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Pad a batch of (inputs, labels) to its longest sequence.

    RETURNS (Tuple[Tensor, Tensor, Tensor]): input ids (B, L), attention mask (B, L) and
        labels (B, L), all int64.
    """
    width = max(len(inputs) for inputs, _ in pairs)
    ids = torch.full((len(pairs), width), pad_id, dtype=torch.long)
    attention = torch.zeros((len(pairs), width), dtype=torch.long)
    labels = torch.full((len(pairs), width), IGNORE, dtype=torch.long)
    for row, (inputs, targets) in enumerate(pairs):
        ids[row, : len(inputs)] = torch.tensor(inputs)
        attention[row, : len(inputs)] = 1
        labels[row, : len(targets)] = torch.tensor(targets)
    return ids, attention, labels
