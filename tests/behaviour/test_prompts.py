"""Prompts as a model reads them: the chat template, special tokens on purpose, the
shared split, and the truncation guard (one line, exit 2, nothing computed)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest

from lostmid.behaviour.decoding.prompts import encode, prompt_format
from lostmid.behaviour.decoding.tokenizers import ByteTokenizer, load_tokenizer
from lostmid.behaviour.tasks.kv import kv_example
from lostmid.behaviour.tasks.niah import niah_example
from lostmid.errors import UserError

Cli = Callable[..., tuple[int, str, str]]


def test_chat_template_auto_on_off(chat_model_dir: Path) -> None:
    tok = load_tokenizer(str(chat_model_dir))
    bos = tok.bos_id
    assert bos is not None and tok.chat_template is not None
    ex = niah_example(seed=0, index=0, depth=50, length=400, count_tokens=len)
    user = ex.prompt[: len(ex.prompt) - len(ex.answer_prefix)]
    on = prompt_format("auto", tok)
    assert on.applied and not on.add_special_tokens
    text = on.text(ex, tok)
    # RULER's layout: the question as the user turn, the answer prefix starts the
    # assistant's turn (its leading space dropped)
    assert ex.answer_prefix.startswith(" The special magic number for")
    assert text == f"<s><|user|>{user}<|end|><|assistant|>{ex.answer_prefix.lstrip()}"
    # --answer-prefix off: the whole prompt is the user turn
    whole = prompt_format("auto", tok, "off").text(ex, tok)
    assert whole == f"<s><|user|>{ex.prompt}<|end|><|assistant|>"
    ids = encode([ex], tok, on).prompts[0]
    assert ids[0] == bos and ids.count(bos) == 1  # the template's BOS, not a second one
    off = prompt_format("off", tok)
    assert off.text(ex, tok) == ex.prompt and off.add_special_tokens
    raw = encode([ex], tok, off).prompts[0]
    assert raw[0] == bos and raw.count(bos) == 1 and raw[1:] == tok.encode(ex.prompt)
    assert not prompt_format("auto", ByteTokenizer()).applied
    with pytest.raises(UserError, match=re.escape("--chat-template on: bytes has no chat")):
        prompt_format("on", ByteTokenizer())


@pytest.mark.parametrize("template", ["off", "on"])
def test_shared_split_puts_special_tokens_on_the_context_only(
    chat_model_dir: Path, template: str
) -> None:
    tok = load_tokenizer(str(chat_model_dir))
    fmt = prompt_format(template, tok)
    exs = [kv_example(seed=1, index=0, pairs=4, gold_index=g, key_chars=4) for g in (0, 3)]
    enc = encode(exs, tok, fmt, shared=True)
    assert enc.contexts is not None and enc.questions is not None
    for ex, c, q, p in zip(exs, enc.contexts, enc.questions, enc.prompts, strict=True):
        assert c[0] == tok.bos_id and c.count(tok.bos_id) == 1
        assert tok.bos_id not in q and p == c + q
        context, question = fmt.split(ex, tok)
        assert context + question == fmt.text(ex, tok)
        assert question.startswith('\n\nKey: "') and ex.key in question
    with pytest.raises(UserError, match="needs the question after the records"):
        fmt.split(kv_example(seed=1, index=0, pairs=4, gold_index=0, query_aware=True), tok)


def test_retrieve_records_the_template_and_the_rendered_prompt(
    chat_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    args = ("retrieve", "--model", chat_model_dir, "--pairs", "3", "--key-chars", "2",
            "--examples", "1", "--passes", "teacher")  # fmt: skip
    assert run_cli(*args, "--out", tmp_path / "a")[0] == 0
    assert run_cli(*args, "--chat-template", "off", "--out", tmp_path / "b")[0] == 0
    a = json.loads((tmp_path / "a" / "retrieve.json").read_text())["prompt"]
    b = json.loads((tmp_path / "b" / "retrieve.json").read_text())["prompt"]
    assert a["applied"] and a["chat_template"] == "auto" and not a["add_special_tokens"]
    assert a["rendered_example"].startswith("<s><|user|>Extract the value")
    # Liu's answer prefix starts the assistant's turn: the model writes the value at once
    assert a["rendered_example"].endswith('"<|end|><|assistant|>Corresponding value:')
    assert a["prefix_in_answer"] and a["answer_prefix_text"] == "Corresponding value:"
    assert (tmp_path / "a" / "prompt.txt").read_text() == a["rendered_example"]
    assert not b["applied"] and b["rendered_example"].startswith("Extract the value")
    assert b["rendered_example"].endswith('"\nCorresponding value:')  # Liu's prompt as it is
    assert not b["prefix_in_answer"] and b["answer_prefix_text"] == "\nCorresponding value:"
    assert a["example_tokens"] > b["example_tokens"]
    # the greedy budget is the answer's length in tokens plus the slack
    tok = load_tokenizer(str(chat_model_dir))
    rows = (tmp_path / "a" / "predictions.jsonl").read_text().splitlines()
    longest = max(len(tok.encode(" " + json.loads(r)["value"])) for r in rows)
    assert a["budget"]["answer_tokens"] == longest and a["budget"]["slack"] == 4
    assert a["new_tokens"] == a["budget"]["answer_tokens"] + 4
    # --answer-prefix off: the whole prompt is the user's turn (the layout of before)
    assert run_cli(*args, "--answer-prefix", "off", "--out", tmp_path / "c")[0] == 0
    c = json.loads((tmp_path / "c" / "retrieve.json").read_text())["prompt"]
    assert c["rendered_example"].endswith("Corresponding value:<|end|><|assistant|>")
    assert not c["prefix_in_answer"]


def test_truncation_guard_refuses_before_any_compute(
    bpe_model_dir: Path, tmp_path: Path, run_cli: Cli
) -> None:
    code, _, err = run_cli(
        "retrieve", "--model", bpe_model_dir, "--pairs", "6", "--key-chars", "4",
        "--max-length", "40", "--examples", "1", "--out", tmp_path / "m",
    )  # fmt: skip
    assert code == 2 and err.count("error:") == 1 and "Traceback" not in err  # one line
    assert re.search(r"needs \d+ tokens \(prompt \d+ \+ \d+ after it\) but --max-length", err)
    assert (
        not (tmp_path / "m" / "stages").exists() and not (tmp_path / "m" / "retrieve.json").exists()
    )
    code, _, err = run_cli(
        "retrieve", "--model", "tiny-gpt2", "--tokenizer", "bytes", "--style", "compact",
        "--pairs", "40", "--key-chars", "2", "--out", tmp_path / "g",
    )  # fmt: skip
    assert code == 2 and "but the model takes at most 128" in err


@pytest.mark.parametrize("template", ["off", "on"])
def test_context_tokens_cut_the_encoded_prompt_at_the_records(
    chat_model_dir: Path, template: str
) -> None:
    """The records' token span in the ids encode() gives: decoding those ids gives back
    the records' text (up to a token at each edge), with or without the chat template
    around them (the span calibrate replaces by filler)."""
    tok = load_tokenizer(str(chat_model_dir))
    fmt = prompt_format(template, tok)
    ex = kv_example(seed=2, index=0, pairs=4, gold_index=1, key_chars=6)
    ids = encode([ex], tok, fmt).prompts[0]
    start, end = fmt.context_tokens(ex, tok)
    records = ex.prompt[ex.spans[0][0] : ex.spans[-1][1]]
    # exact up to one token at each edge (a BPE merge across it: '{"' is one token here)
    assert records in tok.decode(ids[max(start - 1, 0) : end + 1])
    assert tok.decode(ids[start + 1 : end - 1]) in records
    assert ex.records[0][0] not in tok.decode(ids[: start - 1])  # no record before it
    if template == "on":
        assert start > len(tok.encode(ex.prompt[: ex.spans[0][0]], special=True))  # the turn


# every way a template's own code fails is one line, before any compute
BROKEN_TEMPLATES = {
    "ZeroDivisionError": "{{ 1/0 }}",
    "OverflowError": "{% for i in range(10**9) %}x{% endfor %}",
    "TypeError": "{{ messages + 1 }}",
    "UndefinedError": "{{ nothing.at.all }}",
    "TemplateSyntaxError": "{% for %}",
    "SecurityError": "{{ ''.__class__.__mro__[1].__subclasses__() }}",
    "ValueError": "{{ 'abc'.index('z') }}",
}


@pytest.mark.parametrize("error", list(BROKEN_TEMPLATES))
def test_a_chat_template_that_fails_any_way_is_one_line_before_compute(
    chat_model_dir: Path, tmp_path: Path, run_cli: Cli, error: str
) -> None:
    import shutil

    model = tmp_path / "model"
    shutil.copytree(chat_model_dir, model)
    config = json.loads((model / "tokenizer_config.json").read_text())
    config["chat_template"] = BROKEN_TEMPLATES[error]
    (model / "tokenizer_config.json").write_text(json.dumps(config))
    (model / "chat_template.jinja").unlink(missing_ok=True)
    out = tmp_path / "out"
    code, _, err = run_cli(
        "retrieve", "--model", model, "--task", "niah", "--length", "400", "--positions", "2",
        "--examples", "1", "--out", out,
    )  # fmt: skip
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and "Traceback" not in err, err
    assert f"its chat template cannot be rendered ({error}" in lines[0], lines[0]
    assert "use --chat-template off" in lines[0]
    assert not (out / "stages").exists() and not (out / "retrieve.json").exists()
