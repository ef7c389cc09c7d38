"""The ablation ladder: which real ingredient breaks the theory (``lostmid ablate``).

The same model (the same weights: one seed per model, the same seed on every rung) is
measured with one real ingredient switched on at a time, from the theory's world to
the real one (:data:`~lostmid.influence.config.RUNGS`; the switches are
:mod:`lostmid.models.ablations`):

    (i)   uniform     uniform attention (W_Q = W_K = 0), no MLP, no positional encoding
    (ii)  mlp         (i) + the MLP
    (iii) logits      (ii) + the real attention logits (positions still off)
    (iv)  real        (iii) + the positional encoding: the real model
    cross frozen-norm (ii) with every norm's 1/sigma frozen to its mean over positions
    cross scaled-embeddings (iv) with the token embeddings scaled (x30)

On each rung and seed: the measured profile (:func:`~lostmid.influence.influence_profile`
on random-token inputs), the branch gains on the same inputs
(:func:`~lostmid.influence.gains.branch_gains`: a_l = s_l/(1+s_l), per-position gains,
MLP gain and coherence) and the layer masks. Then, per rung, every candidate of
:func:`lostmid.compare.compare_measurements` is scored against the seeds: the
zero-parameter predictions ``predicted:rollout`` and ``predicted:jacobian`` (uniform
theory with the Jacobian a_l), ``predicted:positional`` (position-resolved jacobian
kernel with the per-position gains, the MLP and the layer masks) and
``predicted:positional-rollout``, the fitted theory and the naive baselines. With two
or more seeds a prediction's score is its W1 per seed (mean and spread), a fitted
candidate's is out of sample (fit on the other seeds), and the seed noise floor
(W1 between independent seeds) is the resolution; with one seed, scores are in sample
and there is no floor. Log-binned W1 is reported beside W1.

Where the gap opens: the first rung of the ladder (i)-(iv), in order, on which the best
prediction's W1 exceeds both :data:`GAP_FACTOR` times the noise floor and
:data:`GAP_MIN_W1` (needs 2+ seeds; the cross rungs are diagnoses, not steps).

Resumable: each (rung, seed) measurement is a stage of :class:`lostmid.runs.store.StageStore`
under ``OUT/stages``, reused when its configuration is unchanged (``overwrite``
recomputes). Writes ``OUT/ablation.json`` (:meth:`AblationResult.record`) and
``OUT/ablation.png``, and prints the table.

Modules: :mod:`~lostmid.ablate.rungs` (building and measuring a rung),
:mod:`~lostmid.ablate.results` (scores, the result, its table and figure)
and this one (:func:`run_ablate`).
"""

from __future__ import annotations

import time
from functools import partial
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.text import Text

from lostmid.ablate.config import AblationConfig
from lostmid.ablate.results import (
    GAP_FACTOR,
    GAP_MIN_W1,
    AblationResult,
    ablation_figure,
    ablation_table,
    score_rung,
)
from lostmid.ablate.rungs import (
    RUNG_SPECS,
    RungMeasurement,
    build_rung,
    measure_rung,
)
from lostmid.errors import UserError
from lostmid.influence.passes import NonFiniteError
from lostmid.report.layout import fit_table
from lostmid.report.plots import save_figure
from lostmid.runinfo import write_json
from lostmid.runs.budget import STAGE_FLOOR_S, check_budget, check_work, pass_seconds
from lostmid.runs.folder import RunFolder

FILES = ["ablation.json", "ablation.png"]


FOLDER = RunFolder("ablate", resumes="stages", result=FILES[0])
"""What ``run_ablate`` writes into ``--out``: its rungs, kept for a rerun."""


def check_ablate_size(config: AblationConfig) -> None:
    """Refuse, before any model is built, a ladder that cannot fit this machine or would
    take over a day: the model's weights at ``--layers`` (parameters from its config)
    and every (rung, seed) build and measurement, each ``samples x probes`` backward
    passes at the floor of :func:`lostmid.runs.budget.pass_seconds`."""
    from lostmid.influence.run import input_bytes
    from lostmid.models.budget import dtype_bytes, parameter_count, shape_of
    from lostmid.models.load import resolve_config

    overrides: dict[str, Any] = {}
    if config.layers is not None:
        overrides["num_hidden_layers"] = config.layers
    if config.vocab_size is not None:
        overrides["vocab_size"] = config.vocab_size
    hf = resolve_config(
        config.model,
        trust_remote_code=config.trust_remote_code,
        config_overrides=overrides or None,
    )
    parameters = parameter_count(hf)
    layers = shape_of(hf)["layers"]
    hidden = getattr(hf, "hidden_size", None) or getattr(hf, "n_embd", None) or 1024
    inputs = input_bytes(
        config.samples, config.probes, config.gain_directions, config.length, hidden
    )
    models = len(config.seed_list()) * len(config.rungs)
    each = pass_seconds(layers=layers, parameters=parameters, tokens=config.length)
    check_work(
        f"ablate --model {config.model} ({layers:,} layers, {parameters:,} parameters) "
        f"--seeds {len(config.seed_list()):,} x {len(config.rungs)} rungs",
        passes=models,  # one stage each: built, then samples x probes backward passes
        seconds_each=STAGE_FLOOR_S + (config.samples * config.probes + 1) * each,
        need_bytes=parameters * dtype_bytes(config.dtype) + inputs + 200e6,
    )


@FOLDER.holds
def run_ablate(
    config: AblationConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
    size_check: bool = True,
) -> AblationResult:
    """Measure (or resume) every rung at every seed, score, write ablation.json and .png.

    A (rung, seed) measurement already saved under ``out/stages`` with the same
    configuration is reused unless ``overwrite``. ``size_check``: refuse a ladder too
    big for this machine first (:func:`check_ablate_size`); off for ``--no-size-check``.
    """
    out = Path(out)
    # Fail in seconds on a request too big (the token ids and profiles of every sample)
    # and on a bad model or length, before any stage.
    if size_check:
        check_budget(
            f"ablate --samples {config.samples} --length {config.length}",
            need_bytes=16.0 * config.samples * config.length + 200e6,
        )
        check_ablate_size(config)
    build_rung(config, config.rungs[0], config.seed)
    folder = FOLDER.open(out, config.model_spec.claim(config.record()), overwrite=overwrite)
    store = folder.stages()
    start = time.perf_counter()
    rungs, skipped = [], {}
    for rung in config.rungs:
        measurements = []
        for seed in config.seed_list():
            name = f"{rung}-seed{seed}"
            if console is not None:
                console.print(f"ablate: {name}", highlight=False)
            try:
                record = store.run(
                    name,
                    _stage_config(config, rung, seed),
                    partial(measure_rung, config, rung, seed),
                )
            except NonFiniteError as err:  # the switched model itself overflows
                skipped[rung] = f"seed {seed}: {err}"
                if console is not None:
                    console.print(Text.assemble((f"rung {rung} skipped:", "yellow"), " ", str(err)))
                break
            measurements.append(RungMeasurement.from_record(record))
        if rung not in skipped:
            rungs.append(score_rung(RUNG_SPECS[rung], measurements))
    if not rungs:
        raise UserError(f"no rung could be measured; {next(iter(skipped.items()))[1]}")
    seconds = time.perf_counter() - start
    metadata = folder.metadata(
        config.record(),
        config.seed,
        {"total": seconds},
    )
    metadata["stages"] = store.record()
    result = AblationResult(config=config, rungs=tuple(rungs), metadata=metadata, skipped=skipped)
    write_json(out / "ablation.json", result)
    save_figure(ablation_figure(result), out / "ablation.png")
    if console is not None:
        console.print(fit_table(ablation_table(result)))
        gap = result.gap_rung
        if gap is not None:
            console.print(
                f"the gap opens at rung {RUNG_SPECS[gap].label} {gap}: its best prediction's "
                f"W1 is more than {GAP_FACTOR:g} x the seed noise floor and {GAP_MIN_W1:g}"
            )
        elif len(config.seed_list()) > 1:
            console.print(
                "no ladder rung's best prediction leaves the seed noise floor "
                f"(W1 > {GAP_FACTOR:g} x floor and > {GAP_MIN_W1:g})"
            )
        console.print(
            f"{len(store.computed)} measurements computed, {len(store.reused)} reused, "
            f"{seconds:.0f} s; wrote {escape(str(out / 'ablation.json'))} and ablation.png"
        )
    return result


def _stage_config(config: AblationConfig, rung: str, seed: int) -> dict[str, Any]:
    """What identifies one (rung, seed) measurement."""
    record = config.record()
    for key in ("rungs", "seeds", "seed"):
        record.pop(key)
    if not RUNG_SPECS[rung].scaled_embeddings:
        record.pop("embedding_scale")
    return {**record, "rung": rung, "seed": seed}
