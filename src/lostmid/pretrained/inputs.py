"""The study's inputs: token ids of one kind, the same for a checkpoint and its twins.

* ``random``: token ids drawn uniformly from the vocabulary (``lostmid measure``'s);
* ``text``: windows of English prose, the documentation topics that ship with Python
  (``pydoc_data.topics``), tokenized by the model's own tokenizer;
* ``records``: Liu et al.'s key-value prompts (UUID records in a JSON object, then the
  question; :mod:`lostmid.behaviour.tasks.kv`), as many records as fill L tokens;
* ``chat``: the same prose as the user's turn of the model's own chat template, up to the
  assistant's turn (an instruct model as it is used); only for a model with a template.

Every input but ``chat`` starts with the tokens the tokenizer itself adds before a text
(Gemma's ``<bos>``; nothing for SmolLM2), as the model saw in training; a chat input
starts as its template does.
"""

from __future__ import annotations

import random

import numpy as np
import torch

from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.tasks.kv import format_kv_records, kv_records
from lostmid.errors import UserError

INPUT_KINDS = ("random", "text", "records", "chat")
INPUT_LABELS = {
    "random": "random-token inputs",
    "text": "prose inputs",
    "records": "key-value record inputs",
    "chat": "chat-turn inputs",
}
"""What a figure's legend calls each kind: they are kinds of *input* (``random`` is not
a model with random weights; those are the twins)."""
CHAT_BODY = "\x00lostmid-body\x00"  # where the prose goes in a rendered chat template
KV_HEAD = (
    "Extract the value corresponding to the specified key in the JSON object below.\n\nJSON data:\n"
)
KV_TAIL = '\n\nKey: "{key}"\nCorresponding value:'


def prose_text() -> str:
    """English prose that ships with Python: the documentation topics of ``pydoc``."""
    from pydoc_data.topics import topics

    return "\n\n".join(topics[k] for k in sorted(topics))


def prefix_tokens(tok: Tokenizer) -> list[int]:
    """The tokens the tokenizer itself puts before a text (Gemma's ``<bos>``; none for
    SmolLM2, whose ``bos_token`` is a chat marker it does not add)."""
    plain, special = tok.encode("a"), tok.encode("a", special=True)
    cut = len(special) - len(plain)
    return special[:cut] if cut > 0 and special[cut:] == plain else []


def input_ids(
    kind: str, tok: Tokenizer, vocab: int, count: int, length: int, seed: int
) -> torch.Tensor:
    """(count, length) token ids of one input kind (see the module docstring)."""
    prefix = prefix_tokens(tok)
    body = length - len(prefix)
    rows: list[list[int]] = []
    if kind == "random":
        gen = torch.Generator().manual_seed(seed)
        draws = torch.randint(0, vocab, (count, body), generator=gen)
        rows = [prefix + r.tolist() for r in draws]
    elif kind == "text":
        stream = tok.encode(prose_text())
        if len(stream) < body + 1:
            raise UserError(f"the prose corpus has {len(stream)} tokens, fewer than {body}")
        rng = np.random.default_rng(seed)
        starts = rng.integers(0, len(stream) - body, count)
        rows = [prefix + stream[int(s) : int(s) + body] for s in starts]
    elif kind == "chat":
        if tok.chat_template is None:
            raise UserError(f"{tok.name}: no chat template, so no chat-formatted inputs")
        head_text, _, tail_text = tok.render_chat(CHAT_BODY).partition(CHAT_BODY)
        head, tail = tok.encode(head_text), tok.encode(tail_text)
        inside = length - len(head) - len(tail)
        stream = tok.encode(prose_text())
        if inside < 1 or len(stream) < inside + 1:
            raise UserError(f"L = {length} is too short for a chat-formatted input")
        rng = np.random.default_rng(seed)
        starts = rng.integers(0, len(stream) - inside, count)
        rows = [head + stream[int(s) : int(s) + inside] + tail for s in starts]
    elif kind == "records":
        for index in range(count):
            pairs = kv_records(seed, index, max(2, body // 20), 36)  # ~25 tokens a record
            text, spans = format_kv_records(pairs)
            head = tok.encode(KV_HEAD + text)
            slack = 32  # room for a longer key in the question than the first one's
            keep = body - len(tok.encode(KV_TAIL.format(key=pairs[0][0]))) - slack
            if keep <= len(tok.encode(KV_HEAD)) or len(head) < body:
                raise UserError(f"L = {length} is too short for a key-value records prompt")
            kept_chars = len(tok.decode(head[:keep])) - len(KV_HEAD)
            complete = [i for i, (_, end) in enumerate(spans) if end <= kept_chars]
            if not complete:
                raise UserError(f"L = {length} is too short for a key-value records prompt")
            key = pairs[random.Random(seed * 7919 + index).choice(complete)][0]
            tail = tok.encode(KV_TAIL.format(key=key))
            rows.append(prefix + head[: body - len(tail)] + tail)
    else:
        raise UserError(f"unknown input kind {kind!r}")
    ids = torch.tensor(rows, dtype=torch.long)
    if ids.shape != (count, length):  # pragma: no cover - a bug, not an input
        raise AssertionError(f"inputs of shape {tuple(ids.shape)}, expected {(count, length)}")
    return ids
