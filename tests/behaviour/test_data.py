"""``--data`` readers and ``--export`` writers: files in Liu et al.'s, RULER's and
LongBench's formats built here, prompts checked against the formats written out by hand,
gold moved as Liu's scripts move it, depth kept, round trips, one-line errors."""

from __future__ import annotations

import gzip
import json
import re
from pathlib import Path

import pytest

from lostmid.behaviour.formats.files import write_records
from lostmid.behaviour.formats.records import data_examples, detect_format, move_gold
from lostmid.behaviour.retrieve.grid import grid_examples
from lostmid.errors import UserError


def write_jsonl(path: Path, records: list[dict]) -> Path:
    text = "".join(json.dumps(r) + "\n" for r in records)
    if path.name.endswith(".gz"):
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text)
    return path


def liu_kv_records() -> list[dict]:
    out = []
    for i, gold in enumerate((3, 0, 4)):
        pairs = [[f"k{i}{j}", f"v{i}{j}"] for j in range(5)]
        out.append({"ordered_kv_records": pairs, "key": pairs[gold][0], "value": pairs[gold][1]})
    return out


def test_liu_kv_gold_moved_to_each_index_and_the_prompt_is_liu_s(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "kv-retrieval-5_keys.jsonl.gz", liu_kv_records())
    fmt, exs, left_out = data_examples(path, gold_index=(0, 4))
    assert fmt == "liu-kv" and left_out == 0
    assert [(e.gold_index, e.item) for e in exs] == [(0, 0), (0, 1), (0, 2), (4, 0), (4, 1), (4, 2)]
    first = exs[0]  # record 0, gold (k03, v03) moved from index 3 to index 0
    assert [k for k, _ in first.records] == ["k03", "k00", "k01", "k02", "k04"]
    expected = (
        "Extract the value corresponding to the specified key in the JSON object below.\n\n"
        'JSON data:\n{"k03": "v03",\n "k00": "v00",\n "k01": "v01",\n "k02": "v02",\n'
        ' "k04": "v04"}\n\nKey: "k03"\nCorresponding value:'
    )
    assert first.prompt == expected and first.target == " v03" and first.depth_pct == 0.0
    last = exs[5]  # record 2: gold already last
    assert [k for k, _ in last.records] == [f"k2{j}" for j in range(5)]
    # no index asked: Liu's five default positions
    _, default, _ = data_examples(path)
    assert sorted({e.gold_index for e in default}) == [0, 1, 2, 3, 4]
    qa = data_examples(path, gold_index=(2,), query_aware=True)[1][0]
    assert qa.prompt.count('Key: "k03"') == 2 and qa.query_start is None


def qa_records() -> list[dict]:
    docs = [
        {"title": "first doc", "text": "first doc text", "hasanswer": False, "isgold": False},
        {"title": "second doc", "text": "second doc text", "hasanswer": False, "isgold": False},
        {"title": "gold doc", "text": "Paris is the capital", "hasanswer": True, "isgold": True},
    ]
    return [
        {"question": "capital of France?", "answers": ["Paris", "paris city"], "ctxs": docs},
        {"question": "q2?", "answers": ["x"], "ctxs": [docs[2], docs[0], docs[1]]},
    ]


def test_liu_qa_gold_document_moved_among_the_distractors(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "nq-open-3_total_documents_gold_at_2.jsonl", qa_records())
    fmt, kept, _ = data_examples(path)  # no index asked: where the file has it
    assert fmt == "liu-qa" and [e.gold_index for e in kept] == [0, 2]
    _, moved, _ = data_examples(path, gold_index=(0,))
    ex = next(e for e in moved if e.item == 0)
    instruction = (
        "Write a high-quality answer for the given question using only the provided "
        "search results (some of which might be irrelevant)."
    )
    assert ex.prompt == (
        f"{instruction}\n\nDocument [1](Title: gold doc) Paris is the capital\n"
        "Document [2](Title: first doc) first doc text\n"
        "Document [3](Title: second doc) second doc text\n\nQuestion: capital of France?\n"
        "Answer:"
    )
    assert ex.task == "qa" and ex.references == ("Paris", "paris city") and ex.match == "any"
    assert [d["title"] for d in ex.source["ctxs"]] == ["gold doc", "first doc", "second doc"]
    with pytest.raises(UserError, match=re.escape("--design shared needs records to query")):
        data_examples(path, shared=True)


def test_ruler_records_depth_from_the_needle_and_all_outputs_needed(tmp_path: Path) -> None:
    filler = "The grass is green. " * 40  # 800 characters
    at = len(filler) // 4
    needle = "One of the special magic numbers for red-apple is: 1234567."
    text = f"Some intro.\n{filler[:at]}{needle} {filler[at:]}\nWhat is it?"
    offset = text.index("1234567")
    records = [
        {"index": 0, "input": text, "outputs": ["1234567"], "length": 300,
         "answer_prefix": " The special magic number for red-apple mentioned is"},
        {"index": 1, "input": "no number here", "outputs": ["7"], "length": 10, "depth": 90},
        {"index": 2, "input": "a 11 b 22", "outputs": ["11", "22"], "length": 10},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "niah_single.jsonl", records)
    fmt, exs, left_out = data_examples(path)
    assert fmt == "ruler" and left_out == 0
    by_item = {e.item: e for e in exs}
    first = by_item[0]
    assert first.depth_pct == pytest.approx(100 * offset / len(text)) and first.depth == 25
    assert first.prompt == text + records[0]["answer_prefix"]
    assert by_item[1].depth == 100 and by_item[1].depth_pct == 90.0  # snapped; exact kept
    assert by_item[2].match == "all" and by_item[2].references == ("11", "22")
    _, fine, _ = data_examples(path, depth=(0, 20, 90))
    assert {e.item: e.depth for e in fine} == {0: 20, 1: 90, 2: 20}  # "11" at 2/9: 22 %


def test_longbench_records_placed_by_their_answer_or_left_out(tmp_path: Path) -> None:
    context = "Passage 1: cats.\nPassage 2: the answer is Lyon.\nPassage 3: dogs."
    records = [
        {"input": "Which city?", "context": context, "answers": ["Lyon"], "length": 12,
         "dataset": "hotpotqa"},
        {"input": "Nothing?", "context": "no answer here", "answers": ["Paris"], "length": 3},
    ]  # fmt: skip
    path = write_jsonl(tmp_path / "hotpotqa.jsonl", records)
    fmt, exs, left_out = data_examples(path)
    assert fmt == "longbench" and left_out == 1 and len(exs) == 1
    ex = exs[0]
    assert ex.depth_pct == pytest.approx(100 * context.index("Lyon") / len(context))
    assert ex.prompt.startswith("Answer the question based on the given passages.")
    assert f"The following are given passages.\n{context}\n\n" in ex.prompt
    assert ex.prompt.endswith("Question: Which city?\nAnswer:")
    with pytest.raises(UserError, match="no longbench record could be placed"):
        data_examples(write_jsonl(tmp_path / "lb2.jsonl", records[1:]))


def test_exports_read_back_to_the_same_examples(tmp_path: Path) -> None:
    common = dict(examples=2, seed=4, pairs=6, gold_index=None, depth=None, positions=3,
                  key_chars=3, style="liu", query_aware=False, haystack="repeat", vocab=64,
                  offset=128, niah_length=700, design="moved", count_tokens=len)  # fmt: skip
    for task, lengths in (("kv", (None,)), ("niah", (400, 700))):
        made = grid_examples(task, lengths=lengths, **common)
        path = write_records(made, tmp_path / f"{task}.jsonl.gz", [len(e.prompt) for e in made])
        rows = [json.loads(line) for line in gzip.open(path, "rt")]
        if task == "kv":
            assert detect_format(rows[0]) == "liu-kv"
        else:  # RULER's record, depth and the prompt's token count kept
            assert detect_format(rows[0]) == "ruler"
            assert rows[0]["length"] == len(made[0].prompt) and rows[0]["depth"] == 0
            assert rows[0]["input"] + rows[0]["answer_prefix"] == made[0].prompt
        _, back, _ = data_examples(path)
        key = [(e.prompt, e.position, e.value, e.item, e.length, e.depth_pct) for e in made]
        assert [(e.prompt, e.position, e.value, e.item, e.length, e.depth_pct) for e in back] == key


def test_shared_data_keeps_the_records_and_asks_each_key(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "kv.jsonl", liu_kv_records())
    _, exs, _ = data_examples(path, gold_index=(0, 2, 4), shared=True)
    record0 = [e for e in exs if e.item == 0]
    assert {e.records for e in record0} == {tuple((f"k0{j}", f"v0{j}") for j in range(5))}
    assert [e.key for e in record0] == ["k00", "k02", "k04"]
    contexts = {e.prompt[: e.query_start] for e in record0}
    assert len(contexts) == 1  # one context for every question


def test_move_gold_is_liu_s_pop_and_insert() -> None:
    assert move_gold([1, 2, 3, 4], 0, 3) == [2, 3, 4, 1]
    assert move_gold([1, 2, 3, 4], 3, 0) == [4, 1, 2, 3]


@pytest.mark.parametrize(
    ("records", "kwargs", "message"),
    [
        ([{"foo": 1}], {}, "records must be Liu et al.'s kv"),
        ([{"question": "q", "answers": ["a"], "ctxs": [{"title": "t", "text": "x"}]}], {},
         "exactly one ctxs entry with isgold true, found 0"),
        ([{"ordered_kv_records": [["a", "b"], ["c", "d"]], "key": "a", "value": "z"}], {},
         "its key/value pair is not in ordered_kv_records"),
        ([{"ordered_kv_records": [["a", "b"], ["c", "d"]], "key": "a", "value": "b"}],
         {"gold_index": (5,)}, "--gold-index must be in 0..1"),
        ([{"ordered_kv_records": [["a", "b"], ["c", "d"]], "key": "a", "value": "b"}],
         {"depth": (50,)}, "--depth applies to needle data"),
        ([{"input": "x 1", "outputs": ["1"], "length": 2}], {"gold_index": (0,)},
         "--gold-index applies to kv and QA data"),
    ],
)  # fmt: skip
def test_bad_data_is_one_line(tmp_path: Path, records: list, kwargs: dict, message: str) -> None:
    with pytest.raises(UserError, match=re.escape(message)):
        data_examples(write_jsonl(tmp_path / "d.jsonl", records), **kwargs)


def test_unreadable_files_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="no such file"):
        data_examples(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text('{"a": 1}\nnot json\n')
    with pytest.raises(UserError, match="bad.jsonl line 2: not valid JSON"):
        data_examples(tmp_path / "bad.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(UserError, match="no records"):
        data_examples(tmp_path / "empty.jsonl")


def test_a_gzip_bomb_is_refused_before_it_fills_the_memory(tmp_path: Path) -> None:
    """A small .jsonl.gz that inflates far past the limit stops with one line once the
    limit is passed; a file within it (two gzip members) reads whole."""
    from lostmid.behaviour.formats.files import gunzip_within

    bomb = gzip.compress(b" " * (64 << 20))  # 64 MiB of spaces in about 64 KiB
    with pytest.raises(UserError, match="decompresses to more than"):
        gunzip_within(bomb, tmp_path / "bomb.jsonl.gz", limit=8 << 20)
    two = gzip.compress(b'{"a": 1}\n') + gzip.compress(b'{"a": 2}\n')
    assert gunzip_within(two, tmp_path / "two.jsonl.gz", limit=1 << 20) == gzip.decompress(two)
    with pytest.raises(UserError, match="not a whole gzip file"):
        gunzip_within(two[:-5], tmp_path / "cut.jsonl.gz", limit=1 << 20)


def test_a_data_file_is_counted_and_sized_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A million-record file used to be read and made into prompts (17 GB, minutes) in
    silence: its records are counted without parsing (blank lines, a last line without
    its newline and lines across the reader's blocks counted right), the count enters
    retrieve's size check, and a text past the memory rule is one line."""
    import lostmid.behaviour.formats.files as data
    from lostmid.behaviour.retrieve.config import RetrieveConfig
    from lostmid.behaviour.retrieve.run import check_retrieve_size

    lines = [json.dumps({"n": i, "pad": "x" * (i % 7)}) for i in range(2500)]
    path = tmp_path / "r.jsonl"
    path.write_text("\n\n".join(lines[:1000]) + "\n  \n" + "\n".join(lines[1000:]))
    assert data.count_records(path) == len(lines)
    monkeypatch.setattr(data, "open", lambda p, m: _Blocks(p, 97), raising=False)
    assert data.count_records(path) == len(lines)  # lines cut across 97-byte blocks
    monkeypatch.undo()
    with pytest.raises(UserError, match=r"r.jsonl: .* of text, more than"):
        data.check_text_size(path.stat().st_size, path, limit=1000)
    monkeypatch.setattr(data, "count_records", lambda p: 10**12)
    config = RetrieveConfig(model="tiny-gpt2", data=path, tokenizer="bytes")
    with pytest.raises(UserError, match=r"retrieve --data .*1,000,000,000,000 records"):
        check_retrieve_size(config)
    check_retrieve_size(RetrieveConfig(model="tiny-gpt2", data=path, examples=10))


class _Blocks:
    """A file read in blocks of ``size`` bytes whatever the reader asks for."""

    def __init__(self, path: Path, size: int) -> None:
        self.data, self.at, self.size = Path(path).read_bytes(), 0, size

    def __enter__(self) -> _Blocks:
        return self

    def __exit__(self, *_: object) -> None:
        pass

    def read(self, _: int) -> bytes:
        block = self.data[self.at : self.at + self.size]
        self.at += self.size
        return block


@pytest.mark.parametrize(
    ("record", "said"),
    [
        ({"index": 0, "input": "hay 42", "outputs": "42", "length": 10, "depth": 50},
         "record 1: outputs must be a non-empty list of strings"),
        ({"index": 0, "input": "hay 42", "outputs": ["42"], "length": -5, "depth": 50},
         "record 1: length must be a positive number of tokens, got -5"),
        ({"question": "q?", "answers": ["x"], "ctxs": [
            {"title": "t", "text": "x", "isgold": "yes"}, {"title": "u", "text": "y"}]},
         "record 1: isgold must be true or false, got 'yes'"),
        ('{"ordered_kv_records": [["a", "1"], ["b", "2"]], "key": "a", "value": "1", '
         '"gold_index": ' + "9" * 5000 + "}", "line 1: a number of more than 4,300 digits"),
    ],
)  # fmt: skip
def test_records_once_accepted_silently_are_one_line(
    record: dict | str, said: str, tmp_path: Path
) -> None:
    """RULER's outputs as a string, a negative length, isgold "yes" (truthy, so taken as
    the gold) were read as if right; a 5,000-digit number was a traceback."""
    path = tmp_path / "d.jsonl"
    path.write_text((record if isinstance(record, str) else json.dumps(record)) + "\n")
    task = "niah" if isinstance(record, dict) and "outputs" in record else "kv"
    with pytest.raises(UserError) as err:
        data_examples(path, task=task)
    assert said in str(err.value) and "\n" not in str(err.value)
