"""The behavioural section of ``lostmid reproduce``: small models trained on retrieval.

Each seed trains one retrieval model (``lostmid train --task kv``,
:func:`lostmid.behaviour.run_retrieval_training`) and measures, at every evaluation step,
teacher-forced accuracy by gold index on held-out examples and the influence of each
record on the query (:class:`BehaviourSeed`). The section shows the U at each checkpoint
(pooled over seeds, Wilson 95% intervals) and judges one claim.

The claim "the structural valley predicts the behavioural valley", judged at the last
checkpoint by what the theory predicts for each contrast, not by a rank correlation
(which, against the monotone record influence the structure gives, is minus the rank
correlation of accuracy with position and scores a textbook valley 0). Per seed, with
the middle record the one nearest the midpoint (as in
:func:`lostmid.behaviour.summarise_positions`):

* the structural contrasts of the record influence at step 0, each record's share of
  the sum: primacy p_s = first - middle and recency r_s = last - middle;
* the behavioural contrasts of accuracy at the end: primacy and recency (first - middle,
  last - middle).

Every contrast is a 95% t interval over seeds. The structure predicts a sign for each:
primacy + if its interval lies above 0 (- below, none if it spans 0); recency + only if
the structure has a valley (both structural intervals above 0), otherwise the theory
predicts primacy without recency: "no recency" (the recency anchor belongs to the
query token, not to the records). A behavioural contrast agrees with a + prediction if
its interval lies above 0 and contradicts it if below; it agrees with "no recency" if
its interval lies at or below 0 and contradicts it if above. Rule:

* ``below resolution`` if the structural primacy has no resolved sign (the structure
  predicts nothing at this budget) or fewer than 2 seeds;
* ``reproduced`` if both behavioural contrasts agree with their predictions;
  ``not reproduced`` if one contradicts its prediction; ``inconclusive`` otherwise.

Where the training data's gold law is not uniform (``retrieval-valley`` draws gold
records from beta:0.3, asking about the ends most), the claim says so: such a setting
can put a valley in the behaviour by itself and cannot show that the structure causes
it. Beside it: S_init and S_end, Spearman(accuracy at the end, record influence at step
0 / at the end), the trained model's own link (informative, not judged).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from lostmid.compare.claims import Claim
from lostmid.recordable import fields_record
from lostmid.reproduce.plan import Panel, PlannedStage, StandardSection, preset_threads
from lostmid.stats import Interval, finite_or_none, reference_points, seed_interval, spearman
from lostmid.stats.shape import is_u
from lostmid.stats.verdicts import (
    AGREES,
    BELOW_RESOLUTION,
    CONTRADICTS,
    INCONCLUSIVE,
    NOT_REPRODUCED,
    REPRODUCED,
    side_of,
)
from lostmid.stats.verdicts import agreement as interval_agreement
from lostmid.train.claims import interval_text

if TYPE_CHECKING:
    from lostmid.reproduce.config import ReproduceConfig

LINK_CLAIM = "The structural valley predicts the behavioural valley"
LINK_RULE = (
    "95% t intervals over seeds of the contrasts first - middle (primacy) and last - "
    "middle (recency): the structure's, of each record's share of the influence at step "
    "0, predicts primacy + (if wholly > 0) and recency + only if it has a valley (both "
    "wholly > 0), else no recency; behaviour at the end agrees with + if wholly > 0, "
    "with no recency if wholly <= 0. Below resolution if the structural primacy is "
    "unresolved or fewer than 2 seeds; reproduced if both behavioural contrasts agree; "
    "not reproduced if one contradicts its prediction; else inconclusive"
)


@dataclass(frozen=True)
class BehaviourCheckpoint:
    """One evaluation step of one seed: correct answers and examples per gold index
    (0-indexed records), and the mean influence of each record on the query."""

    step: int
    correct: tuple[int, ...]
    n: tuple[int, ...]
    record_influence: tuple[float, ...]

    @property
    def accuracy(self) -> np.ndarray:
        return np.asarray(self.correct, dtype=np.float64) / np.asarray(self.n)

    def scores(self) -> tuple[Any, ...]:
        """The :class:`~lostmid.behaviour.PositionScore` of every gold index."""
        return position_scores(self.correct, self.n)

    def record(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "correct": list(self.correct),
            "n": list(self.n),
            "record_influence": list(self.record_influence),
        }


@dataclass(frozen=True)
class BehaviourSeed:
    """One seed's retrieval training run, reduced to what the section needs; the full
    run (``retrieval.json``, ``retrieval.png``) is in its folder."""

    seed: int
    preset: str
    pairs: int
    gold: str
    parameters: int
    checkpoints: tuple[BehaviourCheckpoint, ...]
    seconds: float
    folder: str

    @classmethod
    def of(cls, result: Any, folder: Path) -> BehaviourSeed:
        """From a :class:`~lostmid.behaviour.RetrievalTrainResult`."""
        config = result.config
        return cls(
            seed=config.train.seed,
            preset=config.preset,
            pairs=config.task.pairs,
            gold=config.task.gold,
            parameters=result.parameters,
            checkpoints=tuple(
                BehaviourCheckpoint(
                    step=c.step,
                    correct=tuple(p.correct for p in c.positions),
                    n=tuple(p.n for p in c.positions),
                    record_influence=c.record_influence,
                )
                for c in result.checkpoints
            ),
            seconds=result.wall_seconds,
            folder=str(folder),
        )

    def record(self) -> dict[str, Any]:
        return fields_record(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> BehaviourSeed:
        checkpoints = tuple(
            BehaviourCheckpoint(
                step=c["step"],
                correct=tuple(c["correct"]),
                n=tuple(c["n"]),
                record_influence=tuple(c["record_influence"]),
            )
            for c in record["checkpoints"]
        )
        return cls(**{**record, "checkpoints": checkpoints})

    @property
    def final(self) -> BehaviourCheckpoint:
        return self.checkpoints[-1]

    @property
    def initial(self) -> BehaviourCheckpoint:
        return self.checkpoints[0]


def position_scores(correct: Sequence[int], n: Sequence[int]) -> tuple[Any, ...]:
    """Accuracy with its Wilson 95% interval at each gold index 0, 1, ... from counts."""
    from lostmid.behaviour import PositionScore
    from lostmid.stats import wilson_interval

    scores = []
    for index, (k, m) in enumerate(zip(correct, n, strict=True)):
        low, high = wilson_interval(int(k), int(m))
        scores.append(PositionScore(index, "index", int(m), int(k), k / m, low, high, None))
    return tuple(scores)


def has_valley(checkpoint: BehaviourCheckpoint) -> bool:
    """A resolved valley: first - middle and last - middle accuracy both above 0 with
    their Newcombe 95% intervals (the middle as in
    :func:`lostmid.behaviour.summarise_positions`)."""
    from lostmid.behaviour import summarise_positions

    summary = summarise_positions(checkpoint.scores(), "teacher")
    return is_u(summary.primacy, summary.recency)


def link(accuracy: np.ndarray, influence: Sequence[float]) -> float | None:
    """Spearman between accuracy and record influence; None when either is constant."""
    return finite_or_none(spearman(accuracy, influence))


def contrasts(values: Sequence[float] | np.ndarray) -> tuple[float, float]:
    """(first - middle, last - middle) of a profile over the records."""
    v = np.asarray(values, dtype=np.float64)
    m = reference_points(range(v.size))[1]
    return float(v[0] - v[m]), float(v[-1] - v[m])


def predicted_sign(interval: Interval) -> int:
    """+1 / -1 when the interval lies wholly above / below 0, else 0 (no prediction;
    :func:`lostmid.stats.verdicts.side_of`)."""
    return {"above": 1, "below": -1, "spans": 0}[side_of(interval.ci_low, interval.ci_high, 0.0)]


def agreement(prediction: str, measured: Interval) -> str:
    """``agrees``, ``contradicts`` or ``unresolved``: a behavioural contrast against the
    structure's prediction (``+``, ``-`` or ``none``: no such contrast), the rule of
    :func:`lostmid.stats.verdicts.agreement`.

    >>> from lostmid.stats import Interval
    >>> agreement("+", Interval(0.3, 0.1, 0.5, 3)), agreement("none", Interval(0.3, 0.1, 0.5, 3))
    ('agrees', 'contradicts')
    """
    return interval_agreement(prediction, measured.ci_low, measured.ci_high)


def link_claim(seeds: Sequence[BehaviourSeed]) -> Claim:
    """The claim of the module docstring, judged on every seed's last checkpoint."""
    paper = "implied: retrieval fails where influence is lowest (no number given)"
    shares = [np.asarray(s.initial.record_influence) / np.sum(s.initial.record_influence)
              for s in seeds]  # fmt: skip
    structure = [contrasts(r) for r in shares]
    behaviour = [contrasts(s.final.accuracy) for s in seeds]
    init = [link(s.final.accuracy, s.initial.record_influence) for s in seeds]
    end = [link(s.final.accuracy, s.final.record_influence) for s in seeds]
    step = seeds[0].final.step
    law = {s.gold for s in seeds}
    caveat = (
        ""
        if law == {"uniform"}
        else f"the training data's gold law ({', '.join(sorted(law))}) asks about some "
        "records more often, which can make a valley by itself: this setting cannot show "
        "that the structure causes it; "
    )
    claim = (
        LINK_CLAIM
        if not caveat
        else f"{LINK_CLAIM} (gold law {', '.join(sorted(law))} in training: a valley the "
        "data can make; this setting cannot show the structure causes it)"
    )
    numbers = (
        f"step {step}: structure at step 0, primacy {interval_text([p for p, _ in structure])}, "
        f"recency {interval_text([r for _, r in structure])} (record shares); behaviour, "
        f"primacy {interval_text([p for p, _ in behaviour], 2)}, recency "
        f"{interval_text([r for _, r in behaviour], 2)}; S_init {interval_text(init, 2)}, "
        f"S_end (the trained model's own influence) {interval_text(end, 2)}"
    )
    if len(seeds) < 2:
        return Claim(claim, paper, caveat + numbers, BELOW_RESOLUTION, LINK_RULE)
    s_primacy = seed_interval([p for p, _ in structure])
    s_recency = seed_interval([r for _, r in structure])
    b_primacy = seed_interval([p for p, _ in behaviour])
    b_recency = seed_interval([r for _, r in behaviour])
    sign = predicted_sign(s_primacy)
    if sign == 0:
        verdict = BELOW_RESOLUTION
        said = "the structure predicts no resolved primacy"
    else:
        valley = sign > 0 and predicted_sign(s_recency) > 0
        predictions = ("+" if sign > 0 else "-", "+" if valley else "none")
        results = (agreement(predictions[0], b_primacy), agreement(predictions[1], b_recency))
        if CONTRADICTS in results:
            verdict = NOT_REPRODUCED
        elif results == (AGREES, AGREES):
            verdict = REPRODUCED
        else:
            verdict = INCONCLUSIVE
        said = (
            f"predicted primacy {predictions[0]} ({results[0]}), recency "
            f"{'+' if valley else 'none: no structural valley'} ({results[1]})"
        )
    return Claim(claim, paper, f"{said}; {caveat}{numbers}", verdict, LINK_RULE)


@dataclass(frozen=True)
class Behaviour:
    """The behavioural section: every seed's run and the link claim."""

    seeds: tuple[BehaviourSeed, ...]

    def __post_init__(self) -> None:
        steps = {tuple(c.step for c in s.checkpoints) for s in self.seeds}
        if not self.seeds or len(steps) != 1:
            raise ValueError("behaviour seeds must share their evaluation steps")

    @property
    def claims(self) -> tuple[Claim, ...]:
        return (link_claim(self.seeds),)

    @property
    def steps(self) -> list[int]:
        return [c.step for c in self.seeds[0].checkpoints]

    def pooled(self, k: int) -> tuple[Any, ...]:
        """Checkpoint k's accuracy by gold index, counts pooled over seeds (Wilson)."""
        correct = np.sum([s.checkpoints[k].correct for s in self.seeds], axis=0)
        n = np.sum([s.checkpoints[k].n for s in self.seeds], axis=0)
        return position_scores(correct.tolist(), n.tolist())

    def mean_influence(self, k: int) -> np.ndarray:
        """Checkpoint k's record influence, each seed's normalised to sum 1, averaged."""
        rows = [np.asarray(s.checkpoints[k].record_influence) for s in self.seeds]
        return np.mean([r / r.sum() if r.sum() > 0 else r for r in rows], axis=0)

    def table(self) -> list[dict[str, Any]]:
        """One row per checkpoint: accuracy by gold index (pooled), and over seeds the
        mean accuracy, gap, primacy, recency and S_init with 95% t intervals."""
        from lostmid.behaviour import summarise_positions

        rows = []
        for k, step in enumerate(self.steps):
            per_seed = [
                summarise_positions(s.checkpoints[k].scores(), "teacher") for s in self.seeds
            ]
            init = [link(s.checkpoints[k].accuracy, s.initial.record_influence) for s in self.seeds]
            rows.append(
                {
                    "step": step,
                    "accuracy by gold index (pooled)": " ".join(
                        f"{p.accuracy:.2f}" for p in self.pooled(k)
                    ),
                    "mean accuracy": interval_text([p.mean_accuracy for p in per_seed], 2),
                    "gap": interval_text([p.gap.estimate for p in per_seed], 2),
                    "primacy": interval_text([p.primacy.estimate for p in per_seed], 2),
                    "recency": interval_text([p.recency.estimate for p in per_seed], 2),
                    "resolved valleys": sum(has_valley(s.checkpoints[k]) for s in self.seeds),
                    "S_init": interval_text(init, 2),
                }
            )
        return rows

    def paragraphs(self) -> tuple[str, ...]:
        first = self.seeds[0]
        seconds = sum(s.seconds for s in self.seeds)
        return (
            f"Preset {first.preset}: a {first.parameters:,}-parameter byte-level model "
            f"trained on key-value retrieval with {first.pairs} records, "
            f"{len(self.seeds)} seeds ({', '.join(str(s.seed) for s in self.seeds)}), "
            f"{seconds:.0f} s in all. Training draws the gold record from the law "
            f"{first.gold!r} ({gold_note(first.gold)}); evaluation asks every record "
            "equally often. At every evaluation step: teacher-forced argmax accuracy by "
            "gold index on held-out examples (the same for every step) and the influence "
            "of each record (mean over its tokens) on the query.",
            "Rows: accuracy pooled over seeds, then per-seed statistics with 95% t "
            "intervals over seeds; gap = max - min over gold indices, primacy = first - "
            "middle, recency = last - middle; S_init = Spearman(accuracy at that step, "
            "record influence at step 0). Each seed's full run is in "
            f"{Path(first.folder).parent}/seed-S/retrieval.json.",
        )

    def record(self) -> dict[str, Any]:
        return {
            "seeds": [s.record() for s in self.seeds],
            "table": self.table(),
            "claims": list(self.claims),
        }


def gold_note(gold: str) -> str:
    """What the training gold law means for the valley, in words."""
    if gold == "uniform":
        return "every record equally often: any valley comes from the model"
    return (
        "not uniform: records the data asks about less often may be learnt less, so a "
        "valley can come from the data (lostmid.behaviour.tasks.gold)"
    )


def check_behaviour_stage(preset: str, steps: int | None) -> None:
    """What ``lostmid train --task`` refuses for its size, refused before any stage."""
    from lostmid.behaviour.training import resolve_retrieval_config
    from lostmid.train.model import check_training_size

    train = resolve_retrieval_config(preset, steps=steps, save_checkpoints=False).resolved_train()
    check_training_size(
        train.model,
        train.batch_size,
        f"reproduce --behaviour-preset {preset}",
        train.steps,
        steps_flag="--behaviour-steps",
        override=None,
    )


def behaviour_stage(preset: str, steps: int | None, seed: int, folder: Path) -> BehaviourSeed:
    """Train one retrieval model (``preset``, ``steps`` or the preset's, ``seed``) into
    ``folder`` and reduce it to a :class:`BehaviourSeed`."""
    from lostmid.behaviour.training import resolve_retrieval_config, run_retrieval_training

    config = resolve_retrieval_config(preset, steps=steps, seed=seed, save_checkpoints=False)
    result = run_retrieval_training(config, out=folder, overwrite=True)
    return BehaviourSeed.of(result, folder)


def behaviour_figure(behaviour: Behaviour, folder: Path) -> Path:
    """``behaviour.png``: the U at each checkpoint (pooled) and the link at the end."""
    from lostmid.behaviour.retrieve.plot import plot_training
    from lostmid.report.plots import save_figure

    k_all = range(len(behaviour.steps))
    first = behaviour.seeds[0]
    fig = plot_training(
        behaviour.steps,
        [behaviour.pooled(k) for k in k_all],
        [behaviour.mean_influence(k) for k in k_all],
        title=f"{first.preset}: accuracy by gold index, {len(behaviour.seeds)} seeds pooled",
    )
    return save_figure(fig, folder / "behaviour.png")


def behaviour_panel(behaviour: Behaviour, ax: Any) -> None:
    """The section's panel of the lead figure ``summary.png``: the behavioural U at the end
    of training (accuracy by gold record, Wilson intervals, seeds pooled) beside the record
    influence at initialisation (share of the sum)."""
    final = behaviour.pooled(len(behaviour.steps) - 1)
    x = np.arange(len(final))
    acc = np.array([p.accuracy for p in final])
    err = np.array(
        [[p.accuracy - p.ci_low for p in final], [p.ci_high - p.accuracy for p in final]]
    )
    ax.errorbar(x, acc, yerr=err, color="black", marker="o", capsize=3, label="accuracy (end)")
    ax.set_ylim(0, 1.02)
    ax.set_xlabel("gold record (0-indexed)")
    ax.set_ylabel("retrieval accuracy")
    twin = ax.twinx()
    twin.plot(x, behaviour.mean_influence(0), color="#2ca02c", marker="s", lw=1.2,
              label="record influence at init")  # fmt: skip
    twin.set_ylabel("record influence at init (share)", color="#2ca02c")
    first = behaviour.seeds[0]
    ax.set_title(f"behaviour: {first.preset} (gold law {first.gold})", fontsize=10)
    lines = ax.get_legend_handles_labels()
    more = twin.get_legend_handles_labels()
    ax.legend(lines[0] + more[0], lines[1] + more[1], fontsize=7, loc="lower center")


class BehaviourPlugin(StandardSection):
    """The behavioural section (:class:`lostmid.reproduce.plan.Section`): a retrieval
    model trained per seed, its accuracy by gold index at every checkpoint and the link
    claim."""

    key = "behaviour"
    title = "Behaviour: retrieval accuracy by gold index"
    figure_prefix = "behaviour"

    def stages(self, config: ReproduceConfig, device: str, out: Path) -> list[PlannedStage]:
        from lostmid.behaviour.training import retrieval_preset

        scale = config.scale
        if scale.behaviour_steps == 0:
            return []
        threads = preset_threads(retrieval_preset(scale.behaviour_preset).train.model)
        return [
            PlannedStage(
                f"behaviour-seed{seed}",
                {
                    "preset": scale.behaviour_preset,
                    "record": 2,  # BehaviourSeed with its gold law
                    "steps": scale.behaviour_steps,
                    "seed": seed,
                },
                partial(
                    behaviour_stage,
                    scale.behaviour_preset,
                    scale.behaviour_steps,
                    seed,
                    out / "behaviour" / f"seed-{seed}",
                ),
                BehaviourSeed.from_record,
                threads=threads,
                check=partial(check_behaviour_stage, scale.behaviour_preset, scale.behaviour_steps),
            )
            for seed in config.behaviour_seeds()
        ]

    def collect(
        self, config: ReproduceConfig, results: Mapping[str, Any], out: Path
    ) -> Behaviour | None:
        names = [f"behaviour-seed{s}" for s in config.behaviour_seeds()]
        runs = [results[n] for n in names if n in results]
        return Behaviour(tuple(runs)) if runs else None

    def figures(self, value: Behaviour, folder: Path) -> dict[str, Path]:
        return {"behaviour": behaviour_figure(value, folder)}

    def summary_panels(self, value: Behaviour) -> list[Panel]:
        """The U beside the record influence, a panel of ``summary.png`` after the
        core's."""
        return [partial(behaviour_panel, value)]


SECTION = BehaviourPlugin()
