"""Bring your own data (``retrieve --data FILE``) and give it back (``--export``) in the
formats the field uses.

Files: JSON lines (``.jsonl``), gzipped JSON lines (``.jsonl.gz``, as Liu et al. ship
theirs) or one JSON list (``.json``). The format is recognised from the first record's
keys:

* ``liu-kv`` (Liu et al.'s key-value retrieval): ``ordered_kv_records`` (a list of
  ``[key, value]``), ``key``, ``value``. As their ``get_kv_responses_*`` scripts do, the
  gold pair is removed from where it is and inserted at each requested gold index
  (``--gold-index``, ``--positions``; by default 0, 1/4, 1/2, 3/4 and the last); a
  record that states lostmid's ``gold_index`` (an export) is kept where it is when no
  index is requested. Prompt: Liu's (``--query-aware``: theirs with the key first).
* ``liu-qa`` (Liu et al.'s multi-document QA): ``question``, ``answers`` (any one is
  correct), ``ctxs`` (documents with ``title``, ``text``, ``isgold``). The gold document
  (``isgold`` true) is moved to each requested index among the distractors, whose order
  is kept (their ``make_qa_data_from_retrieval_results`` layout); without a request it
  stays where the file has it. Prompt: Liu's ``qa.prompt`` (``--query-aware``: theirs
  with the question first), documents ``Document [i](Title: t) text``, 1-indexed.
* ``ruler`` (RULER's records): ``input``, ``outputs`` (all must be found, their
  ``string_match_all``), ``length`` (tokens), optional ``index`` and ``answer_prefix``
  (the prompt is ``input + answer_prefix``, as their ``call_api`` sends it). The needle
  depth is the record's ``depth`` when it states one (lostmid's exports do; RULER's own
  files do not), else the character offset of the first output in ``input`` as a
  percentage of ``input``.
* ``longbench`` (LongBench's records): ``input`` (the question), ``context``,
  ``answers`` (any one), ``length`` (words). Prompt: LongBench's multi-document QA prompt
  (hotpotqa, 2wikimqa, musique). The depth is the record's ``depth``, else the character
  offset of the first answer found in ``context`` as a percentage of ``context``; a
  record whose answers are nowhere in its context has no position and is left out (the
  count is reported).

Depths that come from a file are snapped to the nearest requested depth (``--depth``,
``--positions``; by default the depths the file states, else 0, 25, 50, 75, 100); the
exact value is kept in ``depth_pct``. Length cells: lostmid's ``length_cell`` when a
record states it, else the record's ``length`` snapped to the nearest of ``--lengths``
when given, else one cell.

Writing (:meth:`RetrievalExample.record`, :func:`write_records`): each example as its
field's record (kv: Liu's; niah: RULER's, with ``depth`` kept; qa, ruler, longbench:
the record read, gold moved) plus lostmid's keys: ``task``, ``prompt``, ``target``,
``gold_index`` or ``depth``, ``depth_pct``, ``length_cell``, ``item``, ``pairs``. Files
written this way read back to the same examples.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import replace
from pathlib import Path
from typing import Any

from lostmid.behaviour.formats.files import read_records
from lostmid.behaviour.tasks.example import (
    RetrievalExample,
    check_depths,
    check_gold_indices,
    default_depths,
    default_gold_indices,
)
from lostmid.behaviour.tasks.kv import kv_query
from lostmid.errors import UserError

FORMATS = ("liu-kv", "liu-qa", "ruler", "longbench")
QA_PROMPT = (
    "Write a high-quality answer for the given question using only the provided search "
    "results (some of which might be irrelevant).\n\n{search_results}\n\nQuestion: "
    "{question}\nAnswer:"
)
QA_PROMPT_QUERY_AWARE = (
    "Write a high-quality answer for the given question using only the provided search "
    "results (some of which might be irrelevant).\n\nQuestion: {question}\n\n"
    "{search_results}\n\nQuestion: {question}\nAnswer:"
)
LONGBENCH_PROMPT = (
    "Answer the question based on the given passages. Only give me the answer and do not "
    "output any other words.\n\nThe following are given passages.\n{context}\n\nAnswer the "
    "question based on the given passages. Only give me the answer and do not output any "
    "other words.\n\nQuestion: {input}\nAnswer:"
)


def detect_format(record: Mapping[str, Any]) -> str:
    """The format of a record from its keys (module doc).

    >>> detect_format({"ordered_kv_records": [], "key": "k", "value": "v"})
    'liu-kv'
    >>> detect_format({"index": 0, "input": "...", "outputs": ["1"], "length": 9})
    'ruler'
    """
    keys = set(record)
    if {"ordered_kv_records", "key", "value"} <= keys:
        return "liu-kv"
    if {"question", "answers", "ctxs"} <= keys:
        return "liu-qa"
    if {"input", "outputs"} <= keys:
        return "ruler"
    if {"input", "context", "answers"} <= keys:
        return "longbench"
    raise UserError(
        "--data: records must be Liu et al.'s kv (ordered_kv_records, key, value) or QA "
        "(question, answers, ctxs), RULER's (input, outputs, length) or LongBench's "
        f"(input, context, answers, length); got keys {sorted(keys)[:8]}"
    )


def _need(record: Mapping[str, Any], where: str, fmt: str, keys: Sequence[str]) -> None:
    missing = [k for k in keys if k not in record]
    if missing:
        raise UserError(f"{where} ({fmt}) lacks {', '.join(missing)}")


def _strings(value: Any, what: str, where: str, one: bool = True) -> tuple[str, ...]:
    """A non-empty list of strings (``one``: a single string too, as one answer)."""
    if isinstance(value, str) and one:
        return (value,)
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise UserError(f"{where}: {what} must be a non-empty list of strings")
    return tuple(value)


def _kv_pairs(record: Mapping[str, Any], where: str) -> list[tuple[str, str]]:
    rows = record["ordered_kv_records"]
    if not isinstance(rows, list) or len(rows) < 2:
        raise UserError(f"{where}: ordered_kv_records needs at least 2 pairs")
    pairs = []
    for row in rows:
        if not (isinstance(row, list | tuple) and len(row) == 2):
            raise UserError(f"{where}: each kv record is a [key, value] pair")
        pairs.append((str(row[0]), str(row[1])))
    if len({k for k, _ in pairs}) != len(pairs):
        raise UserError(f"{where}: ordered_kv_records has duplicate keys")
    return pairs


def _documents(record: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """A QA record's ``ctxs``: a list of documents (objects), or one line."""
    docs = record["ctxs"]
    if not isinstance(docs, list) or not docs or not all(isinstance(d, dict) for d in docs):
        got = type(docs).__name__ if not isinstance(docs, list) else "a list with non-objects"
        raise UserError(
            f"{where}: ctxs must be a non-empty list of documents (objects with title, text, "
            f"isgold), got {got}"
        )
    return docs


def _whole(value: Any, low: int, high: int, what: str, where: str) -> int:
    """A whole number in ``low..high`` read from a record (not from an option), or one
    line naming the record."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise UserError(f"{where}: {what} must be a whole number in {low}..{high}, got {value!r}")
    return value


def _percent(value: Any, what: str, where: str) -> float:
    """A finite percentage in 0..100 read from a record, or one line naming the record."""
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or not 0 <= value <= 100
    ):
        raise UserError(f"{where}: {what} must be a percentage in 0..100, got {value!r}")
    return float(value)


def move_gold(items: Sequence[Any], gold: int, index: int) -> list[Any]:
    """``items`` with the one at ``gold`` removed and inserted at ``index`` (the others
    keep their order), as Liu et al.'s scripts move the gold pair or document.

    >>> move_gold(["a", "G", "b", "c"], 1, 3)
    ['a', 'b', 'c', 'G']
    """
    rest = list(items)
    chosen = rest.pop(gold)
    rest.insert(index, chosen)
    return rest


def qa_prompt(question: str, documents: Sequence[Mapping[str, Any]], query_aware: bool) -> str:
    """Liu et al.'s multi-document QA prompt.

    >>> qa_prompt("q?", [{"title": "t", "text": "x"}], False).splitlines()[2]
    'Document [1](Title: t) x'
    """
    results = "\n".join(
        f"Document [{i + 1}](Title: {d.get('title', '')}) {d.get('text', '')}"
        for i, d in enumerate(documents)
    )
    template = QA_PROMPT_QUERY_AWARE if query_aware else QA_PROMPT
    return template.format(question=question, search_results=results)


def _snap(value: float, grid: Sequence[int]) -> int:
    return min(grid, key=lambda g: (abs(g - value), g))


def _ordered(found: list[tuple[int, int, RetrievalExample]]) -> list[RetrievalExample]:
    """Grouped by length cell, then position, items in order (a grid's order)."""
    found.sort(key=lambda t: (t[2].length is not None, t[2].length or 0, t[0], t[1]))
    return [ex for _, _, ex in found]


def _item(record: Mapping[str, Any], number: int) -> int:
    """lostmid's ``item`` when the record states it (an export), else its line (0-based)."""
    value = record.get("item")
    return int(value) if isinstance(value, int) else number - 1


def _length_cell(
    record: Mapping[str, Any], lengths: Sequence[int] | None, where: str
) -> int | None:
    if "length_cell" in record and record["length_cell"] is not None:
        return _whole(record["length_cell"], 1, 2**40, "length_cell", where)
    length = record.get("length")
    if length is not None and not (
        isinstance(length, int | float) and not isinstance(length, bool)
        and math.isfinite(length) and length > 0
    ):  # fmt: skip
        raise UserError(f"{where}: length must be a positive number of tokens, got {length!r}")
    if lengths and length is not None:
        return _snap(float(length), lengths)
    return None


def file_task(fmt: str) -> tuple[str, ...]:
    """The ``--task`` values a ``--data`` file of format ``fmt`` may be given with: the
    default (kv), and for RULER's records the needle tasks.

    >>> file_task("ruler")[:2], file_task("liu-qa")
    (('kv', 'niah'), ('kv',))
    """
    if fmt == "ruler":
        from lostmid.behaviour.tasks.registry import DEPTH_TASKS

        return ("kv", *DEPTH_TASKS)
    return ("kv",)


def data_examples(
    path: Path,
    *,
    gold_index: Sequence[int] | None = None,
    depth: Sequence[int] | None = None,
    positions: int | None = None,
    examples: int | None = None,
    lengths: Sequence[int] | None = None,
    query_aware: bool = False,
    style: str = "liu",
    shared: bool = False,
    task: str = "kv",
) -> tuple[str, list[RetrievalExample], int]:
    """(format, examples grouped by position, records left out) of a ``--data`` file.

    ``examples``: use the first N records (default all). ``shared``: kv only, the
    records kept in the file's order and the key of each requested index asked
    (``--design shared``). ``style``: the kv prompt (``liu``; ``compact`` for small byte
    models). ``task``: the ``--task`` given with the file; the file's format decides the
    task, so any other than the default (kv) must fit it (:func:`file_task`: RULER's
    records with a needle task), else one line. A field of the wrong type or out of range
    in a record is one line naming the file and the record. Positions and cells as in the
    module doc.
    """
    records = read_records(path)
    try:
        fmt = detect_format(records[0])
    except UserError as err:
        raise UserError(f"--data {path}: {str(err).removeprefix('--data: ')}") from None
    if task not in file_task(fmt):
        raise UserError(
            f"--task {task}: --data {path} holds {fmt} records, not {task}'s; the file decides "
            "the task: leave --task out, or pass a file for that task"
        )
    if examples is not None:
        records = records[:examples]
    if shared and fmt != "liu-kv":
        raise UserError(f"--design shared needs records to query (kv); --data {path} is {fmt}")
    if fmt in ("liu-kv", "liu-qa"):
        if depth is not None:
            raise UserError(f"--depth applies to needle data; {fmt} data is placed by --gold-index")
        if lengths and not any("length_cell" in r for r in records):
            raise UserError(
                f"--lengths applies to generated contexts and to data with lengths; {fmt} "
                "records have none"
            )
        return (
            fmt,
            _indexed_examples(
                records, fmt, gold_index, positions, lengths, query_aware, style, shared, path
            ),
            0,
        )
    if gold_index is not None:
        raise UserError(f"--gold-index applies to kv and QA data; {fmt} data is placed by --depth")
    found, left_out = _depth_examples(records, fmt, depth, positions, lengths, path)
    return fmt, found, left_out


def _indexed_examples(
    records: list[dict[str, Any]],
    fmt: str,
    gold_index: Sequence[int] | None,
    positions: int | None,
    lengths: Sequence[int] | None,
    query_aware: bool,
    style: str,
    shared: bool,
    path: Path,
) -> list[RetrievalExample]:
    requested = gold_index is not None or positions is not None
    out: list[tuple[int, int, RetrievalExample]] = []
    for number, record in enumerate(records, start=1):
        where = f"--data {path} record {number}"
        item = _item(record, number)
        cell = _length_cell(record, lengths, where)
        if fmt == "liu-kv":
            _need(record, where, fmt, ("ordered_kv_records", "key", "value"))
            pairs = _kv_pairs(record, where)
            try:
                gold = pairs.index((str(record["key"]), str(record["value"])))
            except ValueError:
                raise UserError(
                    f"{where}: its key/value pair is not in ordered_kv_records"
                ) from None
            size = len(pairs)
        else:
            _need(record, where, fmt, ("question", "answers", "ctxs"))
            docs = _documents(record, where)
            flags = [d.get("isgold", False) for d in docs]
            if not all(isinstance(f, bool) for f in flags):
                bad = next(f for f in flags if not isinstance(f, bool))
                raise UserError(f"{where}: isgold must be true or false, got {bad!r}")
            golds = [i for i, f in enumerate(flags) if f]
            if len(golds) != 1:
                raise UserError(
                    f"{where}: QA needs exactly one ctxs entry with isgold true, found {len(golds)}"
                )
            gold, size = golds[0], len(docs)
        if gold_index is not None:
            wanted = check_gold_indices(gold_index, size)
        elif positions is not None or (fmt == "liu-kv" and "gold_index" not in record):
            wanted = default_gold_indices(size, positions)
        else:  # as the file has it
            wanted = (_whole(record.get("gold_index", gold), 0, size - 1, "gold_index", where),)
        if shared:
            for g in wanted:
                ex = kv_query(pairs, g, style=style, item=item, length=cell)
                source = {**record, "key": ex.key, "value": ex.value}
                out.append((g, item, replace(ex, source=source)))
            continue
        for g in wanted:
            if fmt == "liu-kv":
                moved = move_gold(pairs, gold, g) if requested or g != gold else pairs
                ex = kv_query(
                    moved, g, query_aware=query_aware, style=style, item=item, length=cell
                )
                source = {**record, "ordered_kv_records": [list(p) for p in moved]}
            else:
                ex, source = _qa_example(record, where, gold, g, query_aware, item, cell)
            if not requested and record.get("depth_pct") is not None:  # the row it had
                ex = replace(ex, depth_pct=_percent(record["depth_pct"], "depth_pct", where))
            out.append((g, item, replace(ex, source=source)))
    return _ordered(out)


def _qa_example(
    record: dict[str, Any],
    where: str,
    gold: int,
    index: int,
    query_aware: bool,
    item: int,
    cell: int | None,
) -> tuple[RetrievalExample, dict[str, Any]]:
    answers = _strings(record["answers"], "answers", where)
    docs = move_gold(deepcopy(record["ctxs"]), gold, index)
    question = str(record["question"])
    prompt = qa_prompt(question, docs, query_aware)
    example = RetrievalExample(
        task="qa",
        prompt=prompt,
        key=question,
        value=answers[0],
        target=" " + answers[0],
        gold_index=index,
        answers=answers,
        match="any",
        pairs=len(docs),
        length=cell,
        depth_pct=100.0 * index / max(len(docs) - 1, 1),
        item=item,
    )
    return example, {**record, "ctxs": docs}


def _depth_examples(
    records: list[dict[str, Any]],
    fmt: str,
    depth: Sequence[int] | None,
    positions: int | None,
    lengths: Sequence[int] | None,
    path: Path,
) -> tuple[list[RetrievalExample], int]:
    placed: list[tuple[float, dict[str, Any], int]] = []
    left_out = 0
    for number, record in enumerate(records, start=1):
        where = f"--data {path} record {number}"
        if fmt == "ruler":
            _need(record, where, fmt, ("input", "outputs"))
            answers = _strings(record["outputs"], "outputs", where, one=False)  # RULER: a list
            haystack = str(record["input"])
        else:
            _need(record, where, fmt, ("input", "context", "answers"))
            answers = _strings(record["answers"], "answers", where)
            haystack = str(record["context"])
        if record.get("depth") is not None:
            exact = _percent(record["depth"], "depth", where)
        else:
            offsets = [haystack.find(a) for a in answers if a and a in haystack]
            if not offsets:
                left_out += 1
                continue
            exact = 100.0 * min(offsets) / max(len(haystack), 1)
        placed.append((exact, record, number))
    if not placed:
        raise UserError(
            f"--data {path}: no {fmt} record could be placed (no depth field and no answer "
            "found in its text); add a depth field (percent) to the records"
        )
    if depth is not None:
        grid = check_depths(depth)
    elif positions is not None:
        grid = default_depths(positions)
    elif all(isinstance(r.get("depth"), int) for _, r, _ in placed):
        grid = check_depths(int(r["depth"]) for _, r, _ in placed)
    else:
        grid = default_depths()
    out: list[tuple[int, int, RetrievalExample]] = []
    for exact, record, number in placed:
        where = f"--data {path} record {number}"
        snapped = _snap(exact, grid)
        item = _item(record, number)
        cell = _length_cell(record, lengths, where)
        if fmt == "ruler":  # every answer must come, after the record's answer prefix
            task, match, prefix = "ruler", "all", str(record.get("answer_prefix", ""))
            answers = _strings(record["outputs"], "outputs", where, one=False)  # RULER: a list
            prompt, key = str(record["input"]) + prefix, str(record.get("key", ""))
        else:  # any one answer will do
            task, match, prefix = "longbench", "any", ""
            answers = _strings(record["answers"], "answers", where)
            prompt = LONGBENCH_PROMPT.format(context=record["context"], input=record["input"])
            key = str(record["input"])
        example = RetrievalExample(
            task=task,
            prompt=prompt,
            key=key,
            value=answers[0],
            target=" " + answers[0],
            depth=snapped,
            answers=answers,
            match=match,
            answer_prefix=prefix,
            length=cell,
            depth_pct=exact,
            item=item,
            source=record,
        )
        out.append((snapped, item, example))
    return _ordered(out), left_out
