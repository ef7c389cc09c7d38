"""The study's input kinds (lostmid.pretrained.inputs): reproducible by seed, windows of
the prose, key-value prompts asking about a record they hold, a chat template's turns."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.behaviour.decoding.tokenizers import load_tokenizer
from lostmid.errors import UserError
from lostmid.pretrained import inputs


class _Templated:
    """The byte tokenizer with a chat template: the user turn between two markers."""

    def __init__(self) -> None:
        self.inner = load_tokenizer("bytes")
        self.name = "templated"
        self.chat_template = "<u>{{ user }}</u><a>"

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return self.inner.encode(text, special=special)

    def decode(self, ids: list[int]) -> str:
        return self.inner.decode(ids)

    def render_chat(self, user: str) -> str:
        return f"<u>{user}</u><a>"


def test_chat_formatted_inputs() -> None:
    tok = _Templated()
    ids = inputs.input_ids("chat", tok, 256, 3, 400, seed=4)
    assert ids.shape == (3, 400)
    stream = bytes(tok.encode(inputs.prose_text()))
    for row in ids.tolist():
        assert bytes(row[:3]) == b"<u>" and bytes(row[-7:]) == b"</u><a>"  # the turns
        assert bytes(row[3:-7]) in stream  # and a window of the prose inside the user's
    with pytest.raises(UserError, match="no chat template"):
        inputs.input_ids("chat", load_tokenizer("bytes"), 256, 3, 400, seed=4)


def test_the_three_input_kinds() -> None:
    tok = load_tokenizer("bytes")
    for kind in (k for k in inputs.INPUT_KINDS if k != "chat"):
        ids = inputs.input_ids(kind, tok, 256, 3, 400, seed=4)
        assert ids.shape == (3, 400)
        assert np.array_equal(ids, inputs.input_ids(kind, tok, 256, 3, 400, seed=4))
        assert not np.array_equal(ids, inputs.input_ids(kind, tok, 256, 3, 400, seed=5))
    text = inputs.input_ids("text", tok, 256, 2, 400, seed=0)
    assert tok.decode(text[0].tolist()) in inputs.prose_text()  # windows of the prose
    records = inputs.input_ids("records", tok, 256, 2, 400, seed=0)
    prompt = tok.decode(records[1].tolist())
    assert prompt.startswith(inputs.KV_HEAD)
    key = prompt.rsplit('Key: "', 1)[1].split('"')[0]
    assert prompt.endswith(inputs.KV_TAIL.format(key=key))
    assert prompt.count(key) == 2  # asked about a key that is in the records
