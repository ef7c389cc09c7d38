"""Structure and behaviour on the same prompts, on real checkpoints:
does the gold span's influence on a real LLM's output say where it loses what it read?

For each example of RULER's multi-key needle at each depth (the behavioural section's
task and prompts: chat template and answer prefix as ``lostmid retrieve`` renders them),
one record (:func:`link_example`): the greedy reply and its correctness (the value in
a ``budget``-token reply, retrieve's ``substring`` rule) and the gold needle's reach on
the answer (:func:`lostmid.influence.gold.gold_span_influence`): its share of the
gradient of the answer's log p w.r.t. the input embeddings, and its share of measure's
Jacobian norm ``||d h_L / d e_j||^2`` (``probes`` Rademacher probes). The prompt is read
once for both: the greedy reply goes on from the gradient pass's keys and values
(:func:`lostmid.behaviour.decoding.generate.greedy_from_cache`). The same prompts through the
random-init twin (seed 0) are the control: what the topology alone gives the needle at
each depth (``twin_per_depth`` examples: its effect spans decades, a few resolve it).

The claim, one row per checkpoint, "its influence profile predicts where it loses the
middle", is the link rule (:func:`lostmid.stats.link.link_verdict`, stated before any
run, fed constructed yes / no / undecided data in its tests) on the Jacobian share, the
influence ``measure`` defines and the paper reasons with, asked two ways: across depths
(does the mean share by depth order the accuracy by depth? Spearman over the depth
means, stratified bootstrap) and within depths (at one depth, do right answers have a
larger share than wrong ones? stratified AUC). Across five depths any two U shapes
correlate, so that answer alone cannot fail a model with a U; the claim needs both:
reproduced when both are supported, not reproduced when either is not supported, else
inconclusive (:func:`claim_verdict`). The gradient share is reported beside it.

Scales (:data:`LINK_SCALES`): ``quick`` SmolLM2 at 512 tokens, one example a depth (a
few minutes; fewer than 5 a depth decide nothing: inconclusive by the rule);
``default`` both checkpoints at 1024 tokens, 20 examples a depth, four distractors (the
behavioural section's calibrated difficulty; about 15 s an example on one quiet CPU
thread: about 30 min a checkpoint, off unless asked). Resumable: one JSON line per example in
``FOLDER/examples.jsonl``; a run with more examples a depth grows a finished one (an
example is drawn by its seed, index and depth). ``--real-link DIR`` reads finished runs
back (``DIR/link.json`` or ``DIR/<model>/link.json``).
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from lostmid.compare.claims import Claim
from lostmid.errors import UserError
from lostmid.files import read_json_object, write_text
from lostmid.models.spec import ModelSpec
from lostmid.reproduce.plan import PerModelSection, SectionRuns, run_replacing
from lostmid.reproduce.real_behaviour import CHECKPOINTS
from lostmid.runs.folder import RunFolder
from lostmid.stats.verdicts import (
    INCONCLUSIVE,
    NOT_REPRODUCED,
    NOT_SUPPORTED,
    REPRODUCED,
    SUPPORTED,
)

CLAIM = "A real LLM's influence profile predicts where it loses the middle"
PAPER = (
    "a position's influence at the output decides whether what sits there is used (the "
    "paper's practical reading of its U-shaped influence)"
)
RULE = (
    "the link rule on the gold needle's share of measure's Jacobian norm, 95% stratified "
    "bootstrap, asked across depths (Spearman of the mean share by depth and the greedy "
    "accuracy by depth: supported above 0.5) and within depths (AUC of the share for "
    "right against wrong answers at one depth: supported above 0.55); reproduced when "
    "both are supported, not reproduced when either interval lies below its boundary "
    "(five depth means of two U shapes correlate whatever the link), else inconclusive "
    "(also with fewer than 5 examples at any depth)"
)
FOLDER = "real-link"
RESULT = "link.json"
EXAMPLES = "examples.jsonl"
COMMAND = "real-link"
RUN_FOLDER = RunFolder(COMMAND, resumes="stages", result=RESULT)
"""What :func:`link_run` writes into its folder: the examples so far, kept for a rerun."""
DEPTHS = (0, 25, 50, 75, 100)
PRETRAINED, TWIN = "pretrained", "twin0"
SCORES = ("jacobian_share", "gradient_share")
CLAIM_VERDICT = {SUPPORTED: REPRODUCED, NOT_SUPPORTED: NOT_REPRODUCED}
LINK_ANSWERS = ("across_depths", "within_depths")
"""The link rule's two answers the claim needs (module doc)."""


@dataclass(frozen=True)
class LinkScale:
    """One scale of the section: which checkpoints, the task's size and difficulty."""

    name: str
    models: tuple[str, ...]
    length: int
    per_depth: int
    distractors: int
    twin_per_depth: int = 5
    budget: int = 16
    probes: int = 1
    task: str = "niah-multikey"

    def design(self, model: ModelSpec | str, seed: int) -> dict[str, Any]:
        """What decides the run's records (the claim of its folder); the answer prefix
        only when it is not the default (``on``), so that older folders resume."""
        spec = ModelSpec.of(model)
        return {
            "model": spec.name,
            "task": self.task,
            "length": self.length,
            "distractors": self.distractors,
            "depths": list(DEPTHS),
            "per_depth": self.per_depth,
            "twin_per_depth": min(self.twin_per_depth, self.per_depth),
            "budget": self.budget,
            "probes": self.probes,
            "seed": seed,
            "twin_seed": 0,
            "chat_template": spec.chat_template,
            "scoring": "substring",
        } | spec.options()  # the answer prefix, tokenizer, dtype, ... only when set


LINK_SCALES = {
    "quick": LinkScale("quick", ("smollm2-135m",), 512, 1, 2, twin_per_depth=1),
    "default": LinkScale("default", CHECKPOINTS, 1024, 20, 4),
}


def _grows(saved: Mapping[str, Any], wanted: Mapping[str, Any]) -> bool:
    """More examples a depth (of the pretrained model or the twin), nothing else changed."""
    counts = ("per_depth", "twin_per_depth")
    same = {k: v for k, v in saved.items() if k not in counts}
    return same == {k: v for k, v in wanted.items() if k not in counts} and all(
        int(wanted[k]) >= int(saved[k]) for k in counts
    )


def link_prompt(
    tokenizer: Any, fmt: Any, design: Mapping[str, Any], depth: int, index: int
) -> tuple[Any, list[int], tuple[int, int]]:
    """An example of the design at ``depth``, drawn by its seed and ``index``: the needle
    example, its prompt's token ids and the needle's token span in them."""
    from lostmid.behaviour.tasks.needles import needles_example

    ex = needles_example(
        seed=int(design["seed"]),
        index=index,
        depth=depth,
        length=int(design["length"]),
        variant=str(design["task"]),
        distractors=int(design["distractors"]),
        count_tokens=lambda s: len(tokenizer.encode(s)),
    )
    ids, span = fmt.encode_span(ex, tokenizer, *ex.spans[0])
    return ex, ids, span


def link_example(
    loaded: Any, tokenizer: Any, fmt: Any, design: Mapping[str, Any], depth: int, index: int
) -> dict[str, Any]:
    """One example's record: its design keys, the needle's token span, the greedy reply
    and its correctness (pretrained only: the twin's answers are noise) and the gold
    span's reach (:meth:`lostmid.influence.gold.GoldSpanInfluence.record`)."""
    from lostmid.behaviour.decoding.answers import answer_correct
    from lostmid.behaviour.decoding.generate import greedy_from_cache
    from lostmid.influence.gold import gold_span_influence

    ex, ids, span = link_prompt(tokenizer, fmt, design, depth, index)
    answer = tokenizer.encode(ex.target)
    greedy = loaded.init == "pretrained"
    # the greedy answer goes on from the gradient pass's keys and values (the prompt's
    # but its last token, the answer's cut off) instead of reading the prompt again
    cache: Any = loaded.adapter.full_cache() if greedy else None
    reach = gold_span_influence(
        loaded, ids, span, answer, probes=int(design["probes"]), seed=index, cache=cache
    )
    right = reply = None
    if greedy:
        cache.crop(-(len(answer) + 1))
        said = greedy_from_cache(
            loaded.adapter,
            loaded.model,
            cache,
            ids[-1],
            int(design["budget"]),
            device=loaded.input_device,
        )
        reply = tokenizer.decode(said)
        right = answer_correct(str(design["scoring"]), reply, ex.references)
    return {"depth": depth, "index": index, "tokens": len(ids), "span": list(span)} | {
        "right": right,
        "reply": reply,
        **reach.record(),
    }


def _read_examples(path: Path) -> list[dict[str, Any]]:
    """The records of ``examples.jsonl``; a line cut short by a killed run is dropped
    (and the file rewritten without it), so a resumed run recomputes only that one."""
    if not path.is_file():
        return []
    lines = path.read_text().splitlines()
    records = []
    for line in lines:
        try:
            records.append(json.loads(line))
        except ValueError:  # cut short, or a number past int's digits: recomputed
            continue
    if len(records) != len(lines) or (lines and not path.read_text().endswith("\n")):
        write_text(path, "".join(json.dumps(r) + "\n" for r in records))
    return records


def _append(path: Path, record: Mapping[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")
        handle.flush()
        os.fsync(handle.fileno())


def link_run(
    design: Mapping[str, Any], folder: Path, *, console: Any = None, overwrite: bool = False
) -> dict[str, Any]:
    """Run (or resume, or grow) the link study of ``design`` in ``folder``: every example
    of the pretrained model and its twin, then ``link.json`` (the summary, with the
    run's configuration, versions, checkpoint and timings) and ``link.png``. Returns
    the summary (:func:`summarise`)."""
    from lostmid.behaviour.decoding.prompts import prompt_format
    from lostmid.behaviour.decoding.tokenizers import tokenizer_for_spec
    from lostmid.runinfo import write_json
    from lostmid.runs.progress import progress

    begin = time.perf_counter()
    folder = Path(folder)
    with RUN_FOLDER.lock(folder):
        opened = RUN_FOLDER.open(folder, dict(design), overwrite=overwrite, grows=_grows)
        path = folder / EXAMPLES
        if overwrite and path.exists():
            path.unlink()
        records = _read_examples(path)
        seen = {(r["model"], r["depth"], r["index"]) for r in records}
        spec = ModelSpec.from_record(design)
        model = spec.name
        tokenizer = tokenizer_for_spec(spec)
        fmt = prompt_format(
            str(design["chat_template"]), tokenizer, str(design.get("answer_prefix", "on"))
        )
        arms: tuple[tuple[str, str, int], ...] = (
            (PRETRAINED, "pretrained", int(design["per_depth"])),
            (TWIN, "random", int(design["twin_per_depth"])),
        )
        todo = [
            (label, init, d, i)
            for label, init, n in arms
            for i in range(n)
            for d in design["depths"]
            if (label, d, i) not in seen
        ]
        checkpoint = None
        with progress(f"real-link {model}", console=console) as bar:
            task = bar.add_task(f"real-link {model}", total=len(todo))
            for label, init, _n in arms:
                mine = [t for t in todo if t[0] == label]
                if not mine:
                    continue
                loaded = spec.load(init=init, seed=int(design["twin_seed"]))
                checkpoint = checkpoint or loaded.checkpoint
                for _, _, depth, index in mine:
                    t0 = time.perf_counter()
                    record = {"model": label} | link_example(
                        loaded, tokenizer, fmt, design, depth, index
                    )
                    record["seconds"] = time.perf_counter() - t0
                    _append(path, record)
                    records.append(record)
                    bar.update(task, last=f"{label} depth {depth} #{index}")
                    bar.advance(task)
                del loaded
        summary = summarise(records, design)
        meta = opened.metadata(
            dict(design), int(design["seed"]), {"total": time.perf_counter() - begin}
        )
        meta["checkpoint"] = checkpoint
        meta["example_seconds"] = float(sum(r.get("seconds", 0.0) for r in records))
        write_json(folder / RESULT, summary | {"metadata": meta})
        plot_link(summary, folder / "link.png")
    return summary


def summarise(records: Sequence[Mapping[str, Any]], design: Mapping[str, Any]) -> dict[str, Any]:
    """Per depth: accuracy (Wilson 95%), mean shares of the pretrained model and the twin;
    the link rule on each share (:data:`SCORES`). Only the design's examples count."""
    from lostmid.stats import wilson_interval
    from lostmid.stats.link import link_verdict

    counts = {PRETRAINED: int(design["per_depth"]), TWIN: int(design["twin_per_depth"])}
    mine = [r for r in records if r["index"] < counts.get(r["model"], 0)]
    pre = sorted(
        (r for r in mine if r["model"] == PRETRAINED), key=lambda r: (r["depth"], r["index"])
    )
    twin = [r for r in mine if r["model"] == TWIN]

    def mean(rows: list[Mapping[str, Any]], key: str) -> float | None:
        return float(np.mean([r[key] for r in rows])) if rows else None

    by_depth = []
    for depth in design["depths"]:
        p = [r for r in pre if r["depth"] == depth]
        t = [r for r in twin if r["depth"] == depth]
        k = sum(bool(r["right"]) for r in p)
        low, high = wilson_interval(k, len(p)) if p else (None, None)
        by_depth.append(
            {
                "depth": depth,
                "n": len(p),
                "correct": k,
                "accuracy": k / len(p) if p else None,
                "ci_low": low,
                "ci_high": high,
                "answer_logp": mean(p, "answer_logp"),
                "jacobian_share": mean(p, "jacobian_share"),
                "gradient_share": mean(p, "gradient_share"),
                "twin_n": len(t),
                "twin_jacobian_share": mean(t, "jacobian_share"),
                "twin_gradient_share": mean(t, "gradient_share"),
            }
        )
    verdicts = {}
    if len(pre) >= 4:
        for score in SCORES:
            verdicts[score] = link_verdict(
                [r["depth"] for r in pre], [bool(r["right"]) for r in pre], [r[score] for r in pre]
            ).record()
    return {
        "model": design["model"],
        "design": dict(design),
        "by_depth": by_depth,
        "link": verdicts,
    }


def link_stage(scale: str, model: ModelSpec | str, seed: int, folder: Path) -> dict[str, Any]:
    """The section's stage: :func:`link_run` at ``scale``; the summary with its folder."""

    def run(design: dict[str, Any], out: Path, overwrite: bool = False) -> None:
        link_run(design, out, overwrite=overwrite)

    # another scale's run in the section's folder is replaced; a direct link_run refuses
    run_replacing(run, LINK_SCALES[scale].design(model, seed), folder)
    summary = read_json_object(folder / RESULT)
    return {k: v for k, v in summary.items() if k != "metadata"} | {"folder": str(folder)}


def plot_link(summary: Mapping[str, Any], path: Path) -> Path:
    """Accuracy by depth (Wilson 95%) beside the needle's mean Jacobian and gradient
    shares by depth, pretrained and its random-init twin (log scale)."""
    from lostmid.report.plots import new_figure, save_figure

    rows = summary["by_depth"]
    depth = [r["depth"] for r in rows]
    fig = new_figure((9.0, 3.4))
    left, right = fig.subplots(1, 2)
    acc = [np.nan if r["accuracy"] is None else r["accuracy"] for r in rows]
    lo = [0.0 if r["ci_low"] is None else a - r["ci_low"] for a, r in zip(acc, rows, strict=True)]
    hi = [0.0 if r["ci_high"] is None else r["ci_high"] - a for a, r in zip(acc, rows, strict=True)]
    left.errorbar(depth, acc, yerr=[lo, hi], marker="o", capsize=3, color="tab:blue")
    left.set(xlabel="needle depth (%)", ylabel="greedy accuracy", ylim=(-0.02, 1.02))
    left.set_title(f"{summary['model']}: accuracy", fontsize=9)
    for key, label, style in (
        ("jacobian_share", "Jacobian share", "-o"),
        ("gradient_share", "gradient share", "--s"),
        ("twin_jacobian_share", "Jacobian share, random-init twin", ":^"),
    ):
        values = [np.nan if r[key] is None else max(r[key], 1e-12) for r in rows]
        right.plot(depth, values, style, label=label)
    right.set(xlabel="needle depth (%)", ylabel="needle's share", yscale="log")
    right.set_title("the needle's reach on the answer", fontsize=9)
    right.legend(fontsize=7)
    return save_figure(fig, path)


def _ci(block: Mapping[str, Any] | None) -> str:
    if not block or block.get("value") is None:
        return "n/a"
    if block.get("low") is None:
        return f"{block['value']:+.2f} [n/a]"
    return f"{block['value']:+.2f} [{block['low']:+.2f}, {block['high']:+.2f}]"


def _share(x: float | None) -> str:
    return "n/a" if x is None else f"{x:.3g}"


def claim_verdict(run: Mapping[str, Any]) -> str:
    """The claim's verdict from the link rule's two answers on the Jacobian share (module
    doc): reproduced when across and within depths are both supported, not reproduced
    when either is not supported, else inconclusive.

    >>> yes, no = {"verdict": "supported"}, {"verdict": "not supported"}
    >>> claim_verdict({"link": {"jacobian_share": {"across_depths": yes, "within_depths": yes}}})
    'reproduced'
    >>> claim_verdict({"link": {"jacobian_share": {"across_depths": yes, "within_depths": no}}})
    'not reproduced'
    >>> claim_verdict({"link": {}})
    'inconclusive'
    """
    block = run["link"].get("jacobian_share")
    if not block:
        return INCONCLUSIVE
    answers = [CLAIM_VERDICT.get(str(block[k]["verdict"]), INCONCLUSIVE) for k in LINK_ANSWERS]
    if NOT_REPRODUCED in answers:
        return NOT_REPRODUCED
    return REPRODUCED if set(answers) == {REPRODUCED} else INCONCLUSIVE


@dataclass(frozen=True)
class RealLink(SectionRuns):
    """The section's result: one summary per checkpoint (:func:`summarise` and its
    folder)."""

    result_file = RESULT
    option = "--real-link"

    @classmethod
    def summary(cls, result: dict[str, Any], folder: Path) -> Mapping[str, Any]:
        if "by_depth" not in result or "design" not in result:
            raise UserError(f"--real-link {folder / RESULT}: not the result of a real-link run")
        return {k: v for k, v in result.items() if k != "metadata"} | {"folder": str(folder)}

    @property
    def claims(self) -> tuple[Claim, ...]:
        rows = []
        for run in self.runs:
            d, link = run["design"], run["link"]
            jac, grad = link.get("jacobian_share", {}), link.get("gradient_share", {})
            curve = " / ".join(
                f"{r['correct']}/{r['n']}:{_share(r['jacobian_share'])}" for r in run["by_depth"]
            )
            ours = (
                f"{run['model']}: {d['task']} at {d['length']} tokens, {d['per_depth']} "
                f"examples a depth; correct:Jacobian share by depth {curve}; across depths "
                f"Spearman {_ci(jac.get('across_depths'))}, within depths AUC "
                f"{_ci(jac.get('within_depths'))}; gradient share across "
                f"{_ci(grad.get('across_depths'))}"
            )
            rows.append(Claim(CLAIM, PAPER, ours, claim_verdict(run), RULE))
        return tuple(rows)

    def table(self) -> list[dict[str, Any]]:
        return [
            {
                "model": run["model"],
                "depth %": r["depth"],
                "correct": f"{r['correct']}/{r['n']}",
                "Jacobian share": _share(r["jacobian_share"]),
                "gradient share": _share(r["gradient_share"]),
                "twin's Jacobian share": _share(r["twin_jacobian_share"]),
            }
            for run in self.runs
            for r in run["by_depth"]
        ]

    def paragraphs(self) -> tuple[str, ...]:
        lines = [
            f"Runs: {self.source}. On each checkpoint's own prompts (RULER's multi-key "
            "needle, as the behavioural section asks it), each example's greedy answer is "
            "scored and the needle's reach on the answer measured: its share of measure's "
            "Jacobian norm of the last hidden state, and its share of the gradient of the "
            "answer's log-probability. The random-init twin on the same prompts shows what "
            "the topology alone gives the needle.",
        ]
        for run in self.runs:
            parts = []
            for score in SCORES:
                block = run["link"].get(score)
                if block:
                    parts.append(
                        f"{score.replace('_', ' ')}: across depths "
                        f"{block['across_depths']['verdict']}, within depths "
                        f"{block['within_depths']['verdict']}"
                    )
            lines.append(f"{run['model']}: " + ("; ".join(parts) or "too few examples") + ".")
            lines.append(f"Files: {run['folder']}.")
        lines.append("Rule: " + RULE + ".")
        return tuple(lines)


class RealLinkPlugin(PerModelSection):
    """The section (:class:`lostmid.reproduce.plan.Section`), key ``real_link``;
    ``--real-link`` chooses its scale (:data:`lostmid.reproduce.config.SECTION_OPTIONS`)."""

    key = "real_link"
    title = "Real checkpoints: does the influence profile predict where the middle is lost?"
    figure_prefix = "real-link-"
    scales = LINK_SCALES
    folder = FOLDER
    figure = "link.png"
    result_type = RealLink
    stage = staticmethod(link_stage)
    needs_layout = True  # the needle's share of the Jacobian hooks the embeddings


SECTION = RealLinkPlugin()
