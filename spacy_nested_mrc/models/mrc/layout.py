"""How MRC sequences are laid out around a window of context: the tokenizer's own pair
template, one ``[CLS] question [SEP] context [SEP]`` per label, or packed questions per label
group, and the room left for the context."""

from dataclasses import dataclass, field
from typing import Any, List, Optional, Tuple

import numpy as np

from ...errors import Errors


@dataclass
class QueryLayout:
    """How the sequences are laid out around the context: one sequence kind per label
    (``[CLS] question [SEP] context [SEP]``), or packed, one per label group
    (``[CLS] q1 [SEP] ... qk [SEP] context [SEP]``).

    prefix (List[np.ndarray]): per kind, the ids before the context.
    suffix (List[np.ndarray]): per kind, the ids after it ([SEP]).
    prefix_types, suffix_types (List[np.ndarray]): their token type ids.
    context_type (int): the token type id of the context.
    room (int): context wordpieces that fit in one window with the longest prefix and suffix.
    groups (List[List[int]]): per kind, its label ids (contiguous, in label order).
    question_spans (List[np.ndarray]): per kind, [n, 2] the wordpiece range [start, end) of
        each of its questions in the prefix.
    packed (bool): whether the sequences are packed.
    max_length (int): wordpieces per sequence.
    """

    prefix: List[np.ndarray]
    suffix: List[np.ndarray]
    prefix_types: List[np.ndarray]
    suffix_types: List[np.ndarray]
    context_type: int
    room: int
    groups: List[List[int]] = field(default_factory=list)
    question_spans: List[np.ndarray] = field(default_factory=list)
    packed: bool = False
    max_length: int = 0


@dataclass
class PairTemplate:
    """The special tokens a tokenizer puts around a pair of sequences (A, B):
    ``head A middle B tail``, with their token type ids and those of A and B."""

    head: List[int]
    middle: List[int]
    tail: List[int]
    head_types: List[int]
    middle_types: List[int]
    tail_types: List[int]
    first_type: int
    second_type: int

    @classmethod
    def of(cls, tokenizer: Any) -> "PairTemplate":
        """The tokenizer's own pair template, read with two sentinel ids."""
        first, second = -7, -8
        seq = tokenizer.build_inputs_with_special_tokens([first], [second])
        types = tokenizer.create_token_type_ids_from_sequences([first], [second])
        i, j = seq.index(first), seq.index(second)
        return cls(
            head=seq[:i],
            middle=seq[i + 1 : j],
            tail=seq[j + 1 :],
            head_types=types[:i],
            middle_types=types[i + 1 : j],
            tail_types=types[j + 1 :],
            first_type=types[i],
            second_type=types[j],
        )

    def prefix(
        self, questions: List[List[int]], separate: bool = True
    ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids before the context for some questions, ``head q1 middle ... qk middle``
        (one question: the tokenizer's own pair; more: joined by its pair separator), or
        without ``separate`` ``head q1 ... qk middle``.

        RETURNS (Tuple[np.ndarray, np.ndarray, np.ndarray]): ids, token type ids, and [k, 2]
            the range [start, end) of each question.
        """
        ids, types, spans = list(self.head), list(self.head_types), []
        for n, question in enumerate(questions, 1):
            spans.append((len(ids), len(ids) + len(question)))
            ids += question
            types += [self.first_type] * len(question)
            if separate or n == len(questions):
                ids += self.middle
                types += self.middle_types
        spans_array = np.asarray(spans, dtype=np.int64).reshape(-1, 2)
        return np.asarray(ids, np.int64), np.asarray(types, np.int64), spans_array


def query_layout(
    tokenizer: Any,
    questions: List[str],
    labels: List[str],
    max_length: int,
    min_context: Optional[int] = None,
    separate: bool = True,
    room: Optional[int] = None,
    label_ids: Optional[List[int]] = None,
) -> QueryLayout:
    """Lay out the sequences for any tokenizer's special tokens: ``[CLS] question [SEP] context
    [SEP]`` per label, or with ``min_context`` packed, ``[CLS] q1 [SEP] ... qk [SEP] context
    [SEP]`` per group of labels.

    Packed, labels join the current group (in label order) while its questions leave at least
    ``min_context`` wordpieces for the context; a label whose question alone leaves less gets
    a group of its own. Without ``separate``, a group's questions follow each other with no
    separator between them (``[CLS] q1 ... qk [SEP] context [SEP]``).

    ``room`` and ``label_ids`` lay out some of a layout's labels (those a text annotates): the
    questions of the labels ``label_ids``, grouped so that each group leaves at least
    ``room`` wordpieces for the context (the full layout's, so that the same windows fit),
    and ``groups`` naming label ids.
    RETURNS (QueryLayout): the layout; raises NME008 when a prefix leaves no room at all.
    """
    template = PairTemplate.of(tokenizer)
    q_ids = [tokenizer(question, add_special_tokens=False)["input_ids"] for question in questions]
    extra = len(template.tail)
    groups: List[List[int]] = [[k] for k in range(len(questions))]
    if min_context is not None and questions:
        needed = max(min_context, room or 0)
        groups = [[0]]
        for k in range(1, len(questions)):
            together = [q_ids[i] for i in groups[-1]] + [q_ids[k]]
            if len(template.prefix(together, separate)[0]) + extra + needed <= max_length:
                groups[-1].append(k)
            else:
                groups.append([k])
    layout = QueryLayout(
        prefix=[], suffix=[], prefix_types=[], suffix_types=[],
        context_type=template.second_type, room=0, groups=groups, question_spans=[],
        packed=min_context is not None, max_length=max_length,
    )
    overhead, longest = 0, []
    for group in groups:
        ids, types, spans = template.prefix([q_ids[k] for k in group], separate)
        layout.prefix.append(ids)
        layout.prefix_types.append(types)
        layout.question_spans.append(spans)
        layout.suffix.append(np.asarray(template.tail, dtype=np.int64))
        layout.suffix_types.append(np.asarray(template.tail_types, dtype=np.int64))
        if len(ids) + extra > overhead:
            overhead, longest = len(ids) + extra, [labels[k] for k in group]
    layout.room = max_length - overhead if room is None else room
    if label_ids is not None:
        layout.groups = [[label_ids[k] for k in group] for group in groups]
    if layout.room < 1 or overhead + layout.room > max_length:
        raise ValueError(
            Errors.NME008.format(labels=longest, needed=overhead, max_length=max_length)
        )
    return layout
