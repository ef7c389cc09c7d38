"""Benchmark of lostmid's reliability (issue 21): hostile inputs, kills, a full disk,
concurrent runs, hostile model directories. Prints the tables of docs/RELIABILITY.md.

1. Bad inputs: every damaged, hostile or misplaced file of tests/faults, every request
   too big to fit, a battery of bad options over the nine commands, and issue 28's
   cases (wrong-typed ``--data`` records and ``--measured`` fields, unreadable folders,
   ``--export-lm-eval`` over a file, model configs that cannot be built, size and time
   refusals, nonsense refused), each run as its own process: how many end in one line
   on stderr and exit 2, how many in a traceback, how many hang (past
   ``--case-timeout``) or are killed by a signal (the OOM killer's -9).
2. Kills: the kill harness (tests/faults/harness.py) on ``reproduce``, ``remedies``,
   ``sweep`` and ``train --resume``: SIGKILL after a random delay, ``--kills`` times,
   then a rerun to completion, compared with an uninterrupted run (JSON value for
   value, bit for bit; weights byte for byte; timings and provenance left out).
3. Full disk: ``measure``, ``sweep`` and ``train`` with ``--out`` on a small tmpfs
   (needs root; skipped otherwise): one line, exit 2, nothing half-written left, and
   the same command completing identically once there is room.
4. Concurrent runs: a second run on a busy ``--out`` (refused naming the first, or
   waiting with ``--wait``), and a lock left by a killed run.
5. Hostile model directories: whether code they name ran, without and with
   ``--trust-remote-code``.
6. Fuzzed readers (``--parts fuzz``, not in the default parts): the property tests of
   tests/faults/test_fuzz_readers.py with ``--fuzz N`` examples each, drawn afresh
   (the suite's 120 are the same every run): every reader returns its type or one line.
8. The third hostile trial's cases (``--parts trial``, not in the default parts): each
   case of the trial that found the default sweep broken, with what it must do (refuse
   in one line, or run): counted ok / traceback / hang / killed / silent / other.
9. Strict readers, retrieve's design and folder ownership (``--parts strict``, not in
   the default parts): the generated cases of tests/faults/strict_cases.py (the same
   damage in every format ``score`` reads, ``true`` and numbers as text in every profile
   field, positions and lengths past the design, ``--overwrite`` into another command's
   run, an ``--out`` inside another run), counted as part 8; a refusal must be the only
   line on stderr.
7. Every option at a huge value (``--parts generated``, not in the default parts): the
   generated cases of tests/faults/test_huge_options.py (each numeric option of each
   command, and each option holding numbers in text, read from the CLI), counted by
   outcome: one line and exit 2 or a run that says what it does / traceback / hang /
   the out-of-memory line / another exit.

Scales: ``micro`` (the test suite's: seconds per command), ``quick`` (each command's
``--quick`` scale, the default) or ``default`` (each command's own defaults: long).
Processes are real: ``--mode exec`` (default) starts ``python -c "from lostmid.cli
import main; main()"`` per run, as a shell would; ``--mode fork`` forks this process
(imports paid once).

Usage: python benchmarks/bench_faults.py [--scale micro|quick|default] [--kills 5]
           [--mode exec|fork] [--parts inputs,kills,disk,concurrency,hostile]
           [--case-timeout 300] [--fuzz 2000]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from datetime import date
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "faults"))

from harness import Run, differences, is_temporary, snapshot, survive_kills, unreadable_json  # noqa: E402
from hostile import build_hostile, evil_pickle  # noqa: E402

SCALES: dict[str, dict[str, list[str]]] = {
    "micro": {},  # filled from tests/faults/test_kills.py
    "quick": {
        "reproduce": ["reproduce", "--quick", "--models", "tiny-qwen2,tiny-gpt2"],
        "remedies": ["remedies", "--quick", "--preset", "retrieval-micro"],
        "sweep": [
            "sweep",
            "--task",
            "measure",
            "--models",
            "tiny-qwen2,tiny-gpt2",
            "--seeds",
            "0-2",
            "--lengths",
            "64,128",
        ],
        "train": ["train", "--preset", "micro", "--steps", "300"],
    },
    "default": {
        "reproduce": ["reproduce"],
        "remedies": ["remedies"],
        "sweep": [
            "sweep",
            "--task",
            "measure",
            "--models",
            "tiny-qwen2,tiny-gpt2",
            "--seeds",
            "0-4",
            "--lengths",
            "256,512",
        ],
        "train": ["train", "--preset", "tiny", "--steps", "2000"],
    },
}

BAD_OPTIONS: list[list[str]] = [
    ["theory", "--layers", "-1"],
    ["theory", "--alpha", "1.5"],
    ["theory", "--mask", "sliding:0"],
    ["theory", "--kernel", "nope"],
    ["theory", "--target", "99999", "--length", "64"],
    ["measure", "--model", "no-such-preset"],
    ["measure", "--model", "/no/such/dir"],
    ["measure", "--length", "0"],
    ["measure", "--output", "nope"],
    ["measure", "--compile", "--checkpointing"],
    ["train", "--preset", "huge"],
    ["train", "--steps", "0"],
    ["train", "--resume", "--overwrite"],
    ["train", "--pairs", "4"],
    ["compare", "--measured", "/no/such.json"],
    ["compare", "--measured", "a.json", "--kernel", "nope"],
    ["reproduce", "--quick", "--full"],
    ["reproduce", "--models", "no-such-model"],
    ["reproduce", "--backend", "slurm"],
    ["ablate", "--model", "tiny-gpt2", "--rungs", "nope"],
    ["ablate", "--model", "tiny-gpt2", "--seeds", "0"],
    ["sweep"],
    ["sweep", "--task", "nope"],
    ["sweep", "--task", "theory", "--seeds", "4-1"],
    ["sweep", "--task", "theory", "--retries", "-1"],
    ["retrieve", "--model", "tiny-qwen2", "--task", "nope"],
    ["retrieve", "--model", "tiny-qwen2", "--gold-index", "0,1,1", "--pairs", "4"],
    ["retrieve", "--model", "tiny-qwen2", "--depth", "50"],
    ["retrieve", "--model", "tiny-qwen2"],
    ["remedies", "--remedies", "nope"],
    ["remedies", "--seeds", "0"],
    ["--wait", "-5", "theory"],
]


def trial_cases(root: Path, hostile: dict[str, Path]) -> list[tuple[str, list[str], dict, str]]:
    """The third hostile trial's cases, each as (label, argv, environment changes, what
    must happen: ``refuse`` = one line and exit 2, ``run`` = exit 0 without a traceback).
    The stale-unit and million-record cases are in the suite (tests/sweep, tests/behaviour)
    and not here: the first needs a run, an edit and a rerun, the second 17 GB."""
    from test_fuzz_readers import KV, QA, RULER

    root.mkdir(parents=True, exist_ok=True)
    tiny = ["--model", "tiny-gpt2", "--tokenizer", "bytes"]
    big = "9" * 5000

    def write(name: str, text: str | bytes) -> str:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(text if isinstance(text, bytes) else text.encode())
        return str(path)

    measure = hostile["measure_json"].read_text()
    theory = hostile["theory_json"].read_text()
    numbered = json.loads(measure)
    numbered["config"]["length"] = True  # a boolean where a number belongs
    study = root / "study-empty"
    (study / "x").mkdir(parents=True, exist_ok=True)
    (study / "study.json").write_text("{}")
    other = root / "other-kind" / "m"
    other.mkdir(parents=True, exist_ok=True)
    (other / "retrieve.json").write_text('{"schema": "lostmid.theory/1"}')
    (root / "empty").mkdir(exist_ok=True)
    deep = root / ("d" * 200)
    theory8 = ["theory", "--layers", "2", "--length", "8"]
    cases: list[tuple[str, list[str], dict, str]] = [
        ("sweep, default backend, 2 units", ["sweep", "--task", "theory", "--lengths", "16,32"],
         {}, "run"),
        ("retrieve niah --lengths 1e9", ["retrieve", *tiny, "--task", "niah", "--lengths",
         "1000000000"], {}, "refuse"),
        ("retrieve --values-per-key 1e9", ["retrieve", *tiny, "--task", "niah-multivalue",
         "--values-per-key", "1000000000"], {}, "refuse"),
        ("retrieve --calibrate --pilot-examples 1e9", ["retrieve", *tiny, "--task",
         "niah-multikey", "--calibrate", "--pilot-examples", "1000000000"], {}, "refuse"),
        ("remedies --examples 1e9", ["remedies", "--examples", "1000000000"], {}, "refuse"),
        ("ablate --layers 1e7", ["ablate", "--model", "tiny-gpt2", "--layers", "10000000"],
         {}, "refuse"),
        ("reproduce --quick --train-steps 1e11", ["reproduce", "--quick", "--train-steps",
         "100000000000"], {}, "refuse"),
        ("retrieve kv --positions 1e9", ["retrieve", *tiny, "--task", "kv", "--positions",
         "1000000000"], {}, "refuse"),
        ("train kv --pairs 1e9", ["train", "--task", "kv", "--pairs", "1000000000"], {},
         "refuse"),
        ("retrieve --data a gzip bomb (4 GiB)", ["retrieve", *tiny, "--data", write(
            "bomb.jsonl.gz", _bomb(4 << 30))], {}, "refuse"),
        ("measure --gain-directions 1e9", ["measure", "--model", "tiny-gpt2", "--length", "8",
         "--gain-directions", "1000000000"], {}, "refuse"),
        ("5,000 digits in --measured", ["compare", "--measured", write(
            "big-measure.json", measure.replace('"length": ', f'"length": {big}, "x": ', 1))],
         {}, "refuse"),
        ("5,000 digits in --theory", ["compare", "--measured", str(hostile["measure_json"]),
         "--theory", write("big-theory.json", theory.replace('"length": ',
         f'"length": {big}, "x": ', 1))], {}, "refuse"),
        ("5,000 digits in --data", ["retrieve", *tiny, "--data", write(
            "big.jsonl", json.dumps(KV)[:-1] + f', "gold_index": {big}}}\n')], {}, "refuse"),
        ("5,000 digits in train --config", ["train", "--config", write(
            "big-config.json", f'{{"steps": {big}}}')], {}, "refuse"),
        ("5,000 digits in .lostmid.run.json", [*theory8, "--out", str(Path(write(
            "claimed/.lostmid.run.json", f'{{"command": "theory", "n": {big}}}')).parent)],
         {}, "run"),
        ("--out name of 300 characters", [*theory8, "--out", str(root / ("n" * 300))], {},
         "refuse"),
        ("--out path past PATH_MAX", [*theory8, "--out", str(deep) + "/d" * 2100], {},
         "refuse"),
        ("--out with brackets P[/]x", [*theory8, "--out", str(root / "P[") + "/]x"], {}, "run"),
        ("--out with markup P[bold red]y", [*theory8, "--out", str(root / "P[bold red]y")], {},
         "run"),
        ("--real-behaviour DIR of another kind", ["reproduce", "--quick", "--real-behaviour",
         str(other.parent)], {}, "refuse"),
        ("--real-behaviour an empty DIR", ["reproduce", "--quick", "--real-behaviour",
         str(root / "empty")], {}, "refuse"),
        ("PYTHONIOENCODING=ascii, a non-ASCII --out", [*theory8, "--out", str(root / "Ä-ö")],
         {"PYTHONIOENCODING": "ascii"}, "run"),
        ("--alpha-schedule list:0.1 on 2 layers", [*theory8, "--alpha-schedule", "list:0.1"],
         {}, "refuse"),
        ("compare --bins 1e9 at L = 16", ["compare", "--measured", str(hostile["measure_json"]),
         "--bins", "1000000000"], {}, "refuse"),
        ("sweep --seed 2^63", ["sweep", "--task", "theory", "--lengths", "8", "--seed",
         "9223372036854775808"], {}, "refuse"),
        ("a boolean in --measured", ["compare", "--measured", write(
            "bool-measure.json", json.dumps(numbered))], {}, "refuse"),
        ('isgold "yes" in --data', ["retrieve", *tiny, "--data", write(
            "isgold.jsonl", json.dumps({**QA, "ctxs": [{**QA["ctxs"][0], "isgold": "yes"},
            QA["ctxs"][1]]}) + "\n")], {}, "refuse"),
        ("RULER outputs as a string", ["retrieve", *tiny, "--task", "niah", "--data", write(
            "outputs.jsonl", json.dumps({**RULER, "outputs": "42"}) + "\n")], {}, "refuse"),
        ("RULER length -5", ["retrieve", *tiny, "--task", "niah", "--data", write(
            "length.jsonl", json.dumps({**RULER, "length": -5}) + "\n")], {}, "refuse"),
        ("--checkpoints DIR whose study.json is {}", ["reproduce", "--quick", "--checkpoints",
         str(study)], {}, "refuse"),
        ("lr Infinity in a train config", ["train", "--config", write(
            "inf-config.json", '{"lr": Infinity}')], {}, "refuse"),
        ("HF_HUB_OFFLINE=0 and a hub id", ["measure", "--model", "Qwen/Qwen2-0.5B"],
         {"HF_HUB_OFFLINE": "0"}, "refuse"),
        ("HF_HUB_OFFLINE empty and a hub id", ["measure", "--model", "Qwen/Qwen2-0.5B"],
         {"HF_HUB_OFFLINE": ""}, "refuse"),
    ]  # fmt: skip
    return cases


def _bomb(size: int) -> bytes:
    """A gzip file of ``size`` spaces (4 MiB for 4 GiB), made a block at a time."""
    import zlib

    deflate = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    block = b" " * (1 << 24)
    parts = [deflate.compress(block) for _ in range(size // len(block))]
    return b"".join([*parts, deflate.flush()])


def trial(
    root: Path, hostile: dict[str, Path], timeout: float, make: Callable[..., list] | None = None
) -> list[dict[str, Any]]:
    """Every case of :func:`trial_cases` (or ``make(root, hostile)``'s) as its own fresh
    interpreter (the environment changes need one): whether it did what it must, or
    ended in a traceback, a hang, a signal, or the wrong way (a refusal that should run,
    a run that should refuse, a refusal of more than one line on stderr: a numpy
    warning before it, say)."""
    rows = []
    cases = (make or trial_cases)(root / "cases", hostile)
    for i, (label, argv, env, expect) in enumerate(cases):
        full = argv if "--out" in argv else [*argv, "--out", str(root / f"o{i}")]
        code = "from lostmid.cli import main; main()"
        start = time.perf_counter()
        try:
            done = subprocess.run(
                [sys.executable, "-c", code, *full], capture_output=True, text=True,
                env={**os.environ, **env}, timeout=timeout, check=False, errors="replace",
            )  # fmt: skip
            status, text = done.returncode, done.stdout + done.stderr
            said = [line for line in done.stderr.splitlines() if line.strip()]
        except subprocess.TimeoutExpired:
            status, text, said = None, "", []
        errors = [line for line in text.splitlines() if line.startswith("error:")]
        if status is None:
            kind = "hang"
        elif "Traceback" in text:
            kind = "traceback"
        elif status < 0:
            kind = "killed"
        elif expect == "refuse":
            one = len(errors) == 1 and (make is None or len(said) == 1)
            kind = "ok" if status == 2 and one else "silent" if status == 0 else "other"
        else:
            kind = "ok" if status == 0 else "other"
        line = (errors or text.strip().splitlines()[-1:] or [""])[0][:160]
        seconds = time.perf_counter() - start
        rows.append({"label": label, "expect": expect, "kind": kind, "code": status,
                     "seconds": seconds, "line": line})  # fmt: skip
    return rows


def micro_commands() -> dict[str, list[str]]:
    from test_kills import MICRO

    return {name: list(args) for name, args in MICRO.items()}


# -- one process ------------------------------------------------------------------------


def outcome(argv: list[str], root: Path, mode: str, timeout: float = 1200) -> dict[str, Any]:
    """Run ``lostmid ARGV`` once: its exit code and how it ended on stderr; a run past
    ``timeout`` is killed and counted as a hang (code None), one ended by a signal
    (negative code: -9 is the OOM killer's) as killed."""
    log = root / f"run-{time.perf_counter_ns()}.log"
    run = Run(argv, log, mode)
    try:
        code: int | None = run.wait(timeout)
    except TimeoutError:
        code = None
    text = log.read_text(errors="replace")
    lines = [line for line in text.splitlines() if line.startswith("error:")]
    return {
        "argv": argv,
        "code": code,
        "one_line": code == 2 and len(lines) == 1 and "Traceback" not in text,
        "traceback": "Traceback" in text,
        "hang": code is None,
        "killed": code is not None and code < 0,
        "line": lines[0] if lines else text.strip().splitlines()[-1:] or [""],
    }


def issue28_inputs(root: Path, hostile: dict[str, Path]) -> tuple[list[list[str]], list[str]]:
    """Issue 28's second-round cases as command lines (the inputs of
    tests/faults/test_bad_fields.py, test_inputs.py and test_sizes.py), and the cases
    that cannot be made here, with why."""
    from test_bad_fields import CONFIGS, DATA, KV, MEASURED, _config_dir, _edit
    from test_inputs import CASES as INPUT_CASES

    root.mkdir(parents=True, exist_ok=True)
    retrieve = ["retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes", "--passes", "teacher"]
    argvs: list[list[str]] = []
    for i, (_, name, data, _) in enumerate(DATA):  # wrong-typed --data records
        path = root / f"data{i}" / name
        path.parent.mkdir()
        path.write_bytes(data)
        argvs.append([*retrieve, "--data", str(path)])
    kv = root / "kv.jsonl"  # a --data file for another task
    kv.write_text(json.dumps(KV) + "\n")
    argvs.append([*retrieve, "--task", "niah", "--data", str(kv)])
    good = json.loads(hostile["measure_json"].read_text())
    for i, (field, value, _) in enumerate(MEASURED):  # wrong-typed --measured fields
        bad = root / f"measure{i}.json"
        bad.write_text(json.dumps(_edit(good, field, value)))
        argvs.append(["compare", "--measured", str(bad)])
    target = root / "tasks-file"  # --export-lm-eval over a file, a folder with files
    target.write_bytes(b"my notes\n")
    folder = root / "tasks-folder"
    folder.mkdir()
    (folder / "utils.py").write_bytes(b"# mine\n")
    for there in (target, folder):
        argvs.append(
            ["retrieve", "--model", "tiny-qwen2", "--tokenizer", "bytes", "--pairs", "4",
             "--examples", "1", "--export-lm-eval", str(there)]
        )  # fmt: skip
    for i, (_, changes, _) in enumerate(CONFIGS):  # model configs that cannot be built
        model = _config_dir(root, f"model{i}", **changes)
        argvs.append(["retrieve", "--model", str(model), "--tokenizer", "bytes"])
    argvs += [list(argv) for argv, _ in INPUT_CASES]  # seeds, dtypes, sizes, nonsense
    argvs.append(["theory", "--length", "8", "--out", ""])  # an empty --out
    skipped = []
    if os.geteuid() == 0:  # root reads any folder: the suite simulates these instead
        skipped.append("unreadable --model/--tokenizer folders and --out (running as root)")
    else:
        for name, flag in (("truncated", "--model"), ("custom_tokenizer", "--tokenizer")):
            locked = root / f"locked-{name}"
            subprocess.run(["cp", "-r", str(hostile[name]), str(locked)], check=True)
            locked.chmod(0)
            model = ["--model", str(locked)] if flag == "--model" else [
                "--model", "tiny-qwen2", "--tokenizer", str(locked)]  # fmt: skip
            argvs.append(["retrieve" if flag == "--tokenizer" else "measure", *model])
    return argvs, skipped


def bad_inputs(root: Path, mode: str, timeout: float = 1200) -> list[dict[str, Any]]:
    """Every bad input of the suite, each as its own process."""
    from test_bad_files import CASES as FILE_CASES
    from test_sizes import CASES as SIZE_CASES

    hostile = build_hostile(root / "hostile")
    trained = root / "trained"
    assert (
        Run(
            ["train", "--preset", "micro", "--steps", "12", "--out", str(trained)],
            root / "trained.log",
            mode,
        ).wait()
        == 0
    )
    argvs: list[list[str]] = []
    for _, argv, _ in FILE_CASES:
        argvs.append([str(a) for a in argv(hostile)])
    argvs += [list(argv) for argv, _ in SIZE_CASES]
    argvs += BAD_OPTIONS
    for damage in ("evil", "truncated", "garbage", "dynamics"):
        run = root / f"state-{damage}"
        subprocess.run(["cp", "-r", str(trained), str(run)], check=True)
        resume, dynamics = run / "resume.pt", run / "dynamics.json"
        if damage == "evil":
            resume.write_bytes(evil_pickle(hostile["marker"]))
        elif damage == "truncated":
            resume.write_bytes(resume.read_bytes()[:1000])
        elif damage == "garbage":
            resume.write_bytes(b"garbage")
        else:
            dynamics.write_text(dynamics.read_text()[:100])
        argvs.append(["train", "--preset", "micro", "--steps", "12", "--out", str(run), "--resume"])
    second, skipped = issue28_inputs(root / "issue28", hostile)
    argvs += second
    results = []
    for i, argv in enumerate(argvs):
        full = argv if "--out" in argv else [*argv, "--out", str(root / f"o{i}")]
        results.append(
            {**outcome(full, root, mode, timeout), "issue28": i >= len(argvs) - len(second)}
        )
    results.append(
        {
            "argv": ["marker"],
            "code": 0,
            "one_line": True,
            "traceback": False,
            "line": "",
            "marker_written": hostile["marker"].exists(),
            "skipped": skipped,
        }
    )
    return results


# -- kills, disk, concurrency, hostile --------------------------------------------------


def kills(root: Path, commands: dict[str, list[str]], count: int, mode: str) -> list[Any]:
    reports = []
    for name, args in commands.items():

        def first(out: Path, args: list[str] = args) -> list[str]:
            return [*args, "--out", str(out)]

        rerun: Callable[[Path], list[str]] | None = None
        if name == "train":

            def rerun(out: Path, args: list[str] = args) -> list[str]:
                flag = "--resume" if (out / "resume.pt").is_file() else "--overwrite"
                return [*args, "--out", str(out), flag]

        report = survive_kills(
            name,
            first,
            root / name,
            kills=count,
            seed=21,
            mode=mode,
            rerun_argv=rerun,
            timeout=7200,
        )
        reports.append(report)
        print(f"  {name}: {report.row()}", flush=True)
    return reports


def full_disk(root: Path, mode: str) -> list[dict[str, Any]] | None:
    disk = root / "mnt"
    disk.mkdir(parents=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(disk)], capture_output=True
    )
    if mounted.returncode != 0:
        return None
    rows = []
    cases = {
        "measure": (
            [
                "measure",
                "--model",
                "tiny-gpt2",
                "--length",
                "16",
                "--samples",
                "1",
                "--probes",
                "1",
            ],
            "8k",
        ),
        "sweep": (
            ["sweep", "--task", "theory", "--lengths", "8,16,32,64,128", "--param", "layers=2"],
            "160k",
        ),
        "train": (["train", "--preset", "micro", "--steps", "12"], "300k"),
    }
    try:
        for name, (args, size) in cases.items():
            subprocess.run(["mount", "-o", f"remount,size={size}", str(disk)], check=True)
            out = disk / name
            first = outcome([*args, "--out", str(out)], root, mode)
            left = [str(p) for p in disk.rglob("*") if is_temporary(p)] + unreadable_json(disk)
            subprocess.run(["mount", "-o", "remount,size=100m", str(disk)], check=True)
            again = [*args, "--out", str(out)]
            if name == "train":
                again.append("--resume" if (out / "resume.pt").is_file() else "--overwrite")
            code = outcome(again, root, mode)["code"]
            reference = root / f"disk-ref-{name}"
            outcome([*args, "--out", str(reference)], root, mode)
            outs = [str(reference), str(out)]
            same = not differences(snapshot(reference, outs), snapshot(out, outs))
            rows.append(
                {
                    "command": name,
                    "one line + exit 2": first["one_line"],
                    "left behind": len(left),
                    "rerun exit": code,
                    "identical": same,
                }
            )
            subprocess.run(["rm", "-rf", str(out)], check=True)
    finally:
        subprocess.run(["umount", "-l", str(disk)], check=False)
    return rows


def concurrency(root: Path, mode: str) -> dict[str, Any]:
    from lostmid.runs.lock import owner

    args = ["sweep", "--task", "theory", "--lengths", "8,16,32,64,128,256", "--param", "layers=2"]
    out = root / "busy"
    first = Run([*args, "--out", str(out)], root / "first.log", mode)
    while (owner(out) or {}).get("pid") != first.pid:
        time.sleep(0.01)
    second = outcome([*args, "--out", str(out)], root, mode)
    waiting = outcome(["--wait", "600", *args, "--out", str(out)], root, mode)
    first_code = first.wait()
    statuses = [u["status"] for u in json.loads((out / "sweep.json").read_text())["units"]]
    stale = root / "stale"
    killed = Run([*args, "--out", str(stale)], root / "killed.log", mode)
    while (owner(stale) or {}).get("pid") != killed.pid:
        time.sleep(0.01)
    killed.kill()
    taken = outcome([*args, "--out", str(stale)], root, mode)
    return {
        "second refused in one line naming the pid": second["one_line"]
        and f"pid {first.pid}" in second["line"],
        "second with --wait: exit": waiting["code"],
        "its units reused (nothing computed twice)": statuses == ["reused"] * len(statuses),
        "first run's exit": first_code,
        "lock of a killed run taken over: exit": taken["code"],
    }


def hostile_dirs(root: Path, mode: str) -> dict[str, Any]:
    hostile = build_hostile(root / "hostile-dirs")
    marker = hostile["marker"]
    tries = [
        ["measure", "--model", str(hostile["custom_code"])],
        ["ablate", "--model", str(hostile["custom_code"])],
        ["retrieve", "--model", str(hostile["custom_code"]), "--tokenizer", "bytes"],
        ["retrieve", "--model", "tiny-qwen2", "--tokenizer", str(hostile["custom_tokenizer"])],
        ["measure", "--model", str(hostile["evil_bin"]), "--init", "pretrained"],
        ["measure", "--model", str(hostile["evil_bin"]), "--init", "auto"],
    ]
    refused = [
        outcome([*a, "--out", str(root / f"h{i}")], root, mode)["one_line"]
        for i, a in enumerate(tries)
    ]
    without = marker.exists()
    env = dict(os.environ, HF_MODULES_CACHE=str(root / "modules"))
    code = "from lostmid.cli import main; main()"
    subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            "measure",
            "--model",
            str(hostile["custom_code"]),
            "--length",
            "8",
            "--samples",
            "1",
            "--probes",
            "1",
            "--trust-remote-code",
            "--out",
            str(root / "trusted"),
        ],
        env=env,
        capture_output=True,
    )
    return {
        "tried": len(tries),
        "refused in one line": sum(refused),
        "code ran without --trust-remote-code": without,
        "code ran with --trust-remote-code": marker.exists(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="quick")
    parser.add_argument("--kills", type=int, default=5)
    parser.add_argument("--mode", choices=("exec", "fork"), default="exec")
    parser.add_argument("--parts", default="inputs,kills,disk,concurrency,hostile")
    parser.add_argument("--keep", type=Path, default=None, help="Work folder to keep.")
    parser.add_argument(
        "--commands", default="", help="Kill only these commands (comma-separated; all)."
    )
    parser.add_argument(
        "--case-timeout", type=float, default=300.0, help="Seconds before a bad input is a hang."
    )
    parser.add_argument(
        "--fuzz", type=int, default=2000, help="Examples per fuzzed reader (--parts fuzz)."
    )
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    parts = set(args.parts.split(","))
    root = args.keep or Path(tempfile.mkdtemp(prefix="bench-faults-"))
    root.mkdir(parents=True, exist_ok=True)
    print(
        f"bench_faults {date.today()} scale={args.scale} kills={args.kills} mode={args.mode} "
        f"on {platform.node()} ({os.cpu_count()} CPUs), load {os.getloadavg()[0]:.1f}; {root}"
    )
    start = time.perf_counter()
    if "inputs" in parts:
        results = bad_inputs(root / "inputs", args.mode, args.case_timeout)
        last = results.pop()
        for label, rows in (
            ("bad inputs", results),
            (
                "  of which issue 28's (test_bad_fields, test_inputs)",
                [r for r in results if r["issue28"]],
            ),
        ):
            print(
                f"\n{label}: {len(rows)} tried, {sum(r['one_line'] for r in rows)} one line + "
                f"exit 2, {sum(r['traceback'] for r in rows)} tracebacks, "
                f"{sum(r['hang'] for r in rows)} hangs, {sum(r['killed'] for r in rows)} killed "
                "by a signal"
            )
        print(f"planted code ran: {last['marker_written']}; not tried: {last['skipped'] or 'none'}")
        for r in results:
            if not r["one_line"]:
                print(f"  NOT ONE LINE (exit {r['code']}): {' '.join(r['argv'])}: {r['line']}")
    if "kills" in parts:
        commands = micro_commands() if args.scale == "micro" else SCALES[args.scale]
        if args.commands:
            commands = {k: v for k, v in commands.items() if k in args.commands.split(",")}
        print(f"\nkills ({args.kills} per command, scale {args.scale}):")
        reports = kills(root / "kills", commands, args.kills, args.mode)
        print(
            f"{'command':<10} {'kills':>5} {'missed':>6} {'reruns':>6} {'ref s':>7} "
            f"{'identical':>9} {'partial JSON':>12} {'temps left':>10}  JSON files at kills"
        )
        for r in reports:
            row = r.row()
            print(
                f"{r.name:<10} {row['kills']:>5} {row['missed']:>6} {row['reruns']:>6} "
                f"{row['reference s']:>7} {str(row['identical']):>9} "
                f"{row['partial JSON seen']:>12} {row['temporaries left']:>10}  "
                f"{row['JSON files at each kill']}"
            )
            for line in r.differences[:5]:
                print(f"    differs: {line}")
    if "disk" in parts:
        rows = full_disk(root / "disk", args.mode)
        print("\nfull disk:" if rows is not None else "\nfull disk: skipped (cannot mount)")
        for row in rows or []:
            print(f"  {row}")
    if "concurrency" in parts:
        print(f"\nconcurrent runs: {concurrency(root / 'concurrency', args.mode)}")
    if "hostile" in parts:
        print(f"\nhostile model directories: {hostile_dirs(root / 'hostile', args.mode)}")
    if "trial" in parts:
        rows = trial(root / "trial", build_hostile(root / "trial-hostile"), args.case_timeout)
        kinds = ("ok", "traceback", "hang", "killed", "silent", "other")
        counts = ", ".join(f"{sum(r['kind'] == k for r in rows)} {k}" for k in kinds)
        print(f"\nthe third trial's cases: {len(rows)} tried; {counts}")
        for r in rows:
            print(
                f"  {r['kind']:9} {r['expect']:6} {r['seconds']:5.1f} s  {r['label']}: {r['line']}"
            )
    if "strict" in parts:
        from strict_cases import strict_cases

        hostile = build_hostile(root / "strict-hostile")
        rows = trial(root / "strict", hostile, args.case_timeout, strict_cases)
        kinds = ("ok", "traceback", "hang", "killed", "silent", "other")
        counts = ", ".join(f"{sum(r['kind'] == k for r in rows)} {k}" for k in kinds)
        print(f"\nstrict readers, retrieve's design, folders: {len(rows)} tried; {counts}")
        for r in rows:
            print(
                f"  {r['kind']:9} {r['expect']:6} {r['seconds']:5.1f} s  {r['label']}: {r['line']}"
            )
    if "generated" in parts:
        print(f"\nevery numeric option at a huge value: {generated()}")
    if "fuzz" in parts:
        print(f"\nfuzzed readers ({args.fuzz} examples each): {fuzz(args.fuzz)}")
    print(f"\ntotal {time.perf_counter() - start:.0f} s, load {os.getloadavg()[0]:.1f}")


FAILURES = {
    "hang": "without a word",
    "traceback": "Traceback",
    "out of memory": "the estimate let it allocate",
    "another exit": ": exit ",
}
"""How tests/faults/test_huge_options.py says each way a case fails (its assertions)."""


def generated() -> str:
    """The generated huge-value cases (every numeric option of every command, and every
    option holding numbers in text, at a huge value; tests/faults/test_huge_options.py,
    each case a forked child under a memory limit): how many were tried, how many ended
    in one line and exit 2 or ran saying what they did, and each failure by kind."""
    import xml.etree.ElementTree as ET

    test = Path(__file__).resolve().parents[1] / "tests" / "faults" / "test_huge_options.py"
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "junit.xml"
        subprocess.run(
            [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
             "-n", str(min(2, os.cpu_count() or 1)), f"--junitxml={report}", str(test),
             "-k", "refused_in_one_line_or_runs"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        cases = ET.parse(report).getroot().iter("testcase")
        kinds = {kind: 0 for kind in FAILURES} | {"other": 0}
        tried = held = 0
        for case in cases:
            tried += 1
            failed = case.find("failure")
            if failed is None:
                held += 1
                continue
            text = (failed.get("message") or "") + (failed.text or "")
            kind = next((k for k, mark in FAILURES.items() if mark in text), "other")
            kinds[kind] += 1
    failures = ", ".join(f"{n} {kind}" for kind, n in kinds.items())
    return f"{tried} tried, {held} one line + exit 2 or running and saying so; {failures}"


def fuzz(examples: int) -> str:
    """The fuzz properties with ``examples`` fresh examples each: pytest's summary line
    and every falsifying example it printed."""
    env = {**os.environ, "LOSTMID_FUZZ_EXAMPLES": str(examples)}
    test = Path(__file__).resolve().parents[1] / "tests" / "faults" / "test_fuzz_readers.py"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-o", "addopts=", "-q", "-p", "no:cacheprovider",
         str(test)],
        capture_output=True, text=True, env=env, check=False,
    )  # fmt: skip
    lines = done.stdout.strip().splitlines()
    found = [line.strip() for line in lines if line.startswith(("FAILED", "E   "))]
    return "; ".join([lines[-1] if lines else "no output", *found[:10]])


if __name__ == "__main__":
    main()
