"""The main job, ``lostmid reproduce``: the paper's core experiments end to end.

1. Untrained Qwen2-0.5B-shaped and GPT-2-shaped models, several seeds: the influence
   profile at step 0, against the theory predicted from each model's own measured
   residual strengths (no fitting) and against the fitted theory, beside naive baselines.
2. The same with positional encodings off (rotary for Qwen2, position embeddings for
   GPT-2): the profile with against without.
3. Growth with depth: the per-layer profile l against the theory at H = l.
4. Training dynamics on the ``tiny`` preset (does the valley deepen?).
5. A claims table whose verdicts follow from the numbers by stated rules.

Each experiment is a resumable stage (:mod:`lostmid.stages`): a run restarted with the
same ``--out`` reuses the stages it finished. Results: ``report.html``, ``claims.json``,
``reproduce.json`` (every number), ``stages/*.json``, ``figures/*.png`` and, per model,
``MODEL/measure.json`` (seed-averaged, readable by ``lostmid compare``).

Only the transformer blocks matter for the hidden-state Jacobian, so the untrained
models are built with a 512-token vocabulary (``vocab_size`` override) to save memory and
time; inputs are random token ids. This is stated in the report.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from lostmid.errors import UserError
from lostmid.runinfo import run_metadata, write_json
from lostmid.stages import StageStore

DEFAULT_MODELS = ("qwen2-0.5b", "gpt2")


@dataclass(frozen=True)
class Scale:
    """How big a reproduce run is."""

    name: str
    length: int
    seeds: int
    samples: int
    probes: int
    train_steps: int | None  # None: the preset's default; 0: skip training
    train_preset: str = "tiny"
    vocab_size: int | None = 512
    depth_points: int | None = 6  # per-layer profiles at this many layers; None: all


SCALES = {
    "quick": Scale(
        "quick", length=128, seeds=3, samples=2, probes=2, train_steps=150, depth_points=5
    ),
    "default": Scale(
        "default", length=512, seeds=3, samples=2, probes=2, train_steps=None, depth_points=8
    ),
    "full": Scale(
        "full",
        length=2048,
        seeds=5,
        samples=8,
        probes=16,
        train_steps=None,
        train_preset="small",
        vocab_size=None,
        depth_points=None,
    ),
}


@dataclass(frozen=True)
class ReproduceConfig:
    """The resolved configuration of one reproduce run."""

    scale: str = "default"
    models: tuple[str, ...] = DEFAULT_MODELS
    length: int | None = None  # overrides the scale's length
    seeds: int | None = None
    samples: int | None = None
    probes: int | None = None
    train_steps: int | None = None
    train_preset: str | None = None
    seed: int = 0
    device: str = "auto"  # auto: cuda when available, else cpu (measurement stages)

    def resolved_scale(self) -> Scale:
        if self.scale not in SCALES:
            raise UserError(f"unknown scale '{self.scale}'; use quick, default or full")
        s = SCALES[self.scale]
        for name in ("length", "seeds", "samples", "probes"):
            value = getattr(self, name)
            if value is not None:
                if value < 1:
                    raise UserError(f"--{name} must be >= 1, got {value}")
                s = replace(s, **{name: value})
        if self.train_steps is not None:
            if self.train_steps < 0:
                raise UserError(f"--train-steps must be >= 0, got {self.train_steps}")
            s = replace(s, train_steps=self.train_steps)
        if self.train_preset is not None:
            s = replace(s, train_preset=self.train_preset)
        if not self.models:
            raise UserError("--models is empty; give at least one model spec")
        return s


# -- stage bodies (pure computations over models; results are JSON-able dicts) ----------


def measure_stage(
    model: str, seed: int, scale: Scale, per_layer: bool, device: str = "cpu"
) -> dict[str, Any]:
    """One untrained model, one seed, measured twice on the same weights: with its
    positional encoding, then with it switched off (rotary -> identity, or learned
    position embeddings removed). Per-layer profiles with the encoding on."""
    from lostmid.influence import influence_profile, random_token_ids, residual_strength
    from lostmid.models import load_model

    start = time.perf_counter()
    # eager attention batches the probe VJPs well up to L ~ 1024; SDPA beyond keeps
    # memory O(L) per layer (see lostmid.influence.run and docs/BENCHMARKS.md)
    attention = "eager" if scale.length <= 1024 else "sdpa"
    loaded = load_model(
        model,
        seed=seed,
        config_overrides=_overrides(scale),
        attn_implementation=attention,
        device=device,
    )
    if scale.length > loaded.max_length:
        raise UserError(
            f"length {scale.length} exceeds the maximum {loaded.max_length} of {model}; "
            f"pass --length {loaded.max_length} or less"
        )
    ids = random_token_ids(loaded.vocab_size, scale.samples, scale.length, seed)
    result: dict[str, Any] = {"model": loaded.describe(), "attention": attention}
    for positional in (True, False):
        if not positional:
            result["switch"] = _switch_off_positions(loaded)
        layers = depth_layers(loaded.num_layers, scale.depth_points)
        profile = influence_profile(
            loaded,
            ids,
            probes=scale.probes,
            seed=seed,
            per_layer=layers if per_layer and positional else False,
        )
        result["on" if positional else "off"] = {
            "influence": profile.influence,
            "stderr": profile.stderr,
            "mean_sq": profile.mean_sq,
            "per_layer": profile.per_layer,
            "residual_strength": residual_strength(loaded, ids),
        }
    result["seconds"] = time.perf_counter() - start
    return result


def depth_layers(layers: int, points: int | None) -> list[int]:
    """Roughly log-spaced layers 1..H, always including 1 and H (all when ``points`` is
    None or >= H). Layer l costs a backward through l blocks, so few deep ones are cheap.

    >>> depth_layers(24, 6)
    [1, 2, 4, 7, 13, 24]
    """
    if points is None or points >= layers:
        return list(range(1, layers + 1))
    grid = np.unique(np.round(np.geomspace(1, layers, points)).astype(int))
    return [int(x) for x in grid]


def _overrides(scale: Scale) -> dict[str, Any] | None:
    if scale.vocab_size is None:
        return None
    # special token ids must stay inside the smaller vocabulary (unused here)
    return {"vocab_size": scale.vocab_size, "bos_token_id": None, "eos_token_id": None}


def _switch_off_positions(loaded: Any) -> str:
    """Remove this family's positional encoding in place; return which one it was."""
    if loaded.adapter.has_rope:
        loaded.adapter.remove_rope(loaded.model)
        return "rotary -> identity"
    if loaded.adapter.has_position_embedding:
        loaded.adapter.remove_position_embedding(loaded.model)
        return "position embeddings removed"
    raise UserError(f"{loaded.spec}: its family has no positional encoding lostmid can switch off")


# -- analysis (pure numpy over stage results) --------------------------------------------


def seed_average(runs: Sequence[dict[str, Any]]) -> dict[str, np.ndarray]:
    """Average over seeds: influence = sqrt(mean over seeds of E||J_j||^2), with the
    standard error of that mean across seeds (delta method); residual strengths averaged."""
    sq = np.array([r["mean_sq"] for r in runs], dtype=np.float64)  # (S, L)
    mean_sq = sq.mean(axis=0)
    influence = np.sqrt(mean_sq)
    if len(runs) > 1:
        se_sq = sq.std(axis=0, ddof=1) / np.sqrt(len(runs))
    else:
        se_sq = np.asarray(runs[0]["stderr"], dtype=np.float64) * 2 * influence
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.where(influence > 0, se_sq / (2 * influence), 0.0)
    strength = np.mean([r["residual_strength"] for r in runs], axis=0)
    return {"influence": influence, "stderr": stderr, "residual_strength": strength}


def profile_agreement(a: Sequence[float], b: Sequence[float]) -> dict[str, float]:
    """Spearman and W1 between two profiles (see :mod:`lostmid.compare.metrics`)."""
    from lostmid.compare import spearman, wasserstein1

    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return {"spearman": spearman(a, b), "wasserstein1": wasserstein1(a, b)}


def per_seed_prediction(run: dict[str, Any], kernel: str) -> dict[str, float]:
    """Predicted theory (this seed's own residual strengths, no fitting) vs this seed."""
    from lostmid.compare import predict_theory

    measured = np.asarray(run["influence"])
    fit = predict_theory(measured.size, np.asarray(run["residual_strength"]), kernel)
    return profile_agreement(fit.influence, measured)


def depth_growth(run: dict[str, Any], kernel: str) -> list[dict[str, float]]:
    """Per-layer profile l against the theory at H = l with the first l measured a's."""
    from lostmid.theory import influence_row

    per_layer = np.asarray(run["per_layer"], dtype=np.float64)  # (H, L), NaN: not measured
    alphas = np.asarray(run["residual_strength"])
    rows = []
    for layer in range(1, per_layer.shape[0] + 1):
        if not np.all(np.isfinite(per_layer[layer - 1])):
            continue
        theory = influence_row(per_layer.shape[1], layer, alphas[:layer], kernel=kernel)
        measured = per_layer[layer - 1]
        from lostmid.theory import summarize_profile

        rows.append(
            {
                "layer": layer,
                **profile_agreement(theory, measured),
                "log10_ptv_measured": summarize_profile(measured).log10_peak_to_valley,
                "log10_ptv_theory": summarize_profile(theory).log10_peak_to_valley,
            }
        )
    return rows


def stat(values: Sequence[float]) -> dict[str, float]:
    """Mean, sample standard deviation (0 for one value), n."""
    v = np.asarray([x for x in values if x is not None and np.isfinite(x)], dtype=np.float64)
    if v.size == 0:
        return {"mean": float("nan"), "sd": float("nan"), "n": 0}
    return {
        "mean": float(v.mean()),
        "sd": float(v.std(ddof=1)) if v.size > 1 else 0.0,
        "n": int(v.size),
    }


def analyse_model(model: str, runs: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Everything the report says about one architecture, from its per-seed stages."""
    from lostmid.compare import MeasuredProfile, compare_measurement
    from lostmid.theory import KERNELS, summarize_profile

    on = seed_average([r["on"] for r in runs])
    off = seed_average([r["off"] for r in runs])
    layers = int(runs[0]["model"]["layers"])
    length = on["influence"].size
    measured = MeasuredProfile(
        influence=on["influence"],
        stderr=on["stderr"],
        residual_strength=on["residual_strength"],
        layers=layers,
        target=length,
        source=f"{model}, {len(runs)} seeds",
    )
    candidates = compare_measurement(measured, predict=True, kernels=KERNELS)
    per_seed = {
        k: {
            m: stat([per_seed_prediction(r["on"], k)[m] for r in runs])
            for m in ("spearman", "wasserstein1")
        }
        for k in KERNELS
    }
    pe = [profile_agreement(r["on"]["influence"], r["off"]["influence"]) for r in runs]
    pairs = [(a, b) for i, a in enumerate(runs) for b in runs[i + 1 :]]
    floor = [profile_agreement(a["on"]["influence"], b["on"]["influence"]) for a, b in pairs]
    ptv = [summarize_profile(np.asarray(r["on"]["influence"])).log10_peak_to_valley for r in runs]
    growth = depth = None
    if runs[0]["on"].get("per_layer") is not None:
        growth = {k: depth_growth(runs[0]["on"], k) for k in KERNELS}
        depth = {  # the run the growth was measured on (first seed)
            "per_layer": runs[0]["on"]["per_layer"],
            "residual_strength": runs[0]["on"]["residual_strength"],
        }
    best_baseline = min(
        (c for c in candidates.values() if c.kind == "baseline"),
        key=lambda c: c.metrics.wasserstein1,
    )
    return {
        "model": runs[0]["model"],
        "seeds": [r["model"]["seed"] for r in runs],
        "switch": runs[0].get("switch"),
        "on": on,
        "off": off,
        "candidates": {name: c.record() for name, c in candidates.items()},
        "per_seed_prediction": per_seed,
        "positional_on_vs_off": {m: stat([p[m] for p in pe]) for m in ("spearman", "wasserstein1")},
        "seed_noise_floor": {m: stat([p[m] for p in floor]) for m in ("spearman", "wasserstein1")},
        "log10_peak_to_valley": stat(ptv),
        "log10_peak_to_valley_theory": {
            k: candidates[f"predicted:{k}"].metrics.log10_peak_to_valley for k in KERNELS
        },
        "best_baseline": {
            "name": best_baseline.name,
            "wasserstein1": best_baseline.metrics.wasserstein1,
            "spearman": best_baseline.metrics.spearman,
        },
        "depth_growth": growth,
        "depth_profiles": depth,
    }


def model_claims(model: str, a: dict[str, Any]) -> list[Any]:
    """The paper's step-0 claims for one architecture, judged by stated rules."""
    from lostmid.compare import (
        Claim,
        format_value,
        verdict_at_least,
        verdict_at_most,
        verdict_order_of_magnitude,
    )

    n = len(a["seeds"])
    pred = a["per_seed_prediction"]
    sp, w1 = pred["rollout"]["spearman"], pred["rollout"]["wasserstein1"]
    jsp, jw1 = pred["jacobian"]["spearman"], pred["jacobian"]["wasserstein1"]
    pe = a["positional_on_vs_off"]["spearman"]
    ptv = a["log10_peak_to_valley"]
    best = a["best_baseline"]
    pred_w1 = a["candidates"]["predicted:rollout"]["metrics"]["wasserstein1"]
    pred_w1_j = a["candidates"]["predicted:jacobian"]["metrics"]["wasserstein1"]
    encoding = a.get("switch") or "positional encoding removed"
    claims = [
        Claim.judged(
            f"{model} at step 0 matches the theory (Spearman, predicted rollout, no fit)",
            "0.99",
            f"{format_value(sp['mean'], sp['sd'])} (n={n}); jacobian kernel "
            f"{format_value(jsp['mean'], jsp['sd'])}",
            verdict_at_least(sp["mean"], 0.99, 0.01, spread=sp["sd"]),
        ),
        Claim.judged(
            f"{model} at step 0 matches the theory (W1, predicted rollout, no fit)",
            "0.02",
            f"{format_value(w1['mean'], w1['sd'])} (n={n}); jacobian kernel "
            f"{format_value(jw1['mean'], jw1['sd'])}",
            verdict_at_most(w1["mean"], 0.02, 0.01, spread=w1["sd"]),
        ),
        Claim.judged(
            f"{model}: the profile does not depend on the positional encoding "
            f"(Spearman with vs without; {encoding})",
            "0.99 (claimed for Qwen2 without RoPE)",
            format_value(pe["mean"], pe["sd"]) + f" (n={n})",
            verdict_at_least(pe["mean"], 0.99, 0.01, spread=pe["sd"]),
        ),
        Claim.judged(
            f"{model}: peak-to-valley ratio at initialisation",
            "about 10^2",
            f"10^{format_value(ptv['mean'], ptv['sd'], 2)} (n={n})",
            verdict_order_of_magnitude(10 ** ptv["mean"], 100.0, log10_spread=ptv["sd"]),
        ),
    ]
    beats = pred_w1 < best["wasserstein1"] or pred_w1_j < best["wasserstein1"]
    claims.append(
        Claim(
            claim=f"{model}: the predicted theory beats the best naive baseline on W1 "
            "(our check, not the paper's)",
            paper="(implied)",
            ours=f"theory W1 {pred_w1:.4f} (rollout) / {pred_w1_j:.4f} (jacobian) vs "
            f"{best['name']} {best['wasserstein1']:.4f}",
            verdict="reproduced" if beats else "not reproduced",
            rule="reproduced if either predicted kernel has a smaller W1 than every fitted "
            "baseline (baselines get their free parameters fitted; the theory gets none)",
        )
    )
    return claims


# -- the job -----------------------------------------------------------------------------


def run_reproduce(
    config: ReproduceConfig,
    *,
    out: Path,
    overwrite: bool = False,
    console: Console | None = None,
) -> dict[str, Any]:
    """Run (or resume) every stage, then write the claims, the numbers and the report."""
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    scale = config.resolved_scale()
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    out.mkdir(parents=True, exist_ok=True)
    device = resolve_device(config.device)
    _check_inputs(config.models, scale, device)  # fail in seconds, not after a stage
    store = StageStore(out, fresh=overwrite)
    seeds = [config.seed + i for i in range(scale.seeds)]
    start = time.perf_counter()
    plan: list[tuple[str, dict[str, Any], Callable[[], Any]]] = []
    for model in config.models:
        for seed in seeds:
            stage_config = {
                "model": model,
                "seed": seed,
                "length": scale.length,
                "samples": scale.samples,
                "probes": scale.probes,
                "vocab_size": scale.vocab_size,
                "per_layer": seed == seeds[0],
                "device": device,
            }
            plan.append(
                (
                    f"measure-{_slug(model)}-seed{seed}",
                    stage_config,
                    lambda m=model, s=seed, pl=seed == seeds[0]: measure_stage(
                        m, s, scale, pl, device
                    ),
                )
            )
    if scale.train_steps != 0:
        train_config = {
            "preset": scale.train_preset,
            "steps": scale.train_steps,
            "seed": config.seed,
        }
        plan.append(("train", train_config, lambda: training_stage(scale, config.seed, out)))

    results: dict[str, Any] = {}
    with Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        TextColumn("{task.completed}/{task.total} stages"),
        TimeElapsedColumn(),
        console=console or Console(quiet=True),
        transient=False,
    ) as progress:
        task = progress.add_task("reproduce", total=len(plan))
        for name, stage_config, compute in plan:
            progress.update(task, description=f"reproduce: {name}")
            try:
                results[name] = store.run(name, stage_config, compute)
            except KeyboardInterrupt:
                progress.stop()
                (console or Console(stderr=True)).print(
                    f"interrupted during stage {name}; {len(results)} finished stages are "
                    f"saved in {store.dir}; run the same command again to resume"
                )
                raise
            progress.advance(task)

    analyses = {
        model: analyse_model(model, [results[f"measure-{_slug(model)}-seed{s}"] for s in seeds])
        for model in config.models
    }
    claims = [c for model in config.models for c in model_claims(model, analyses[model])]
    training = results.get("train")
    if training is not None:
        claims += training_claim_rows(training)
    for model, analysis in analyses.items():
        _write_measure_json(out / _slug(model) / "measure.json", model, analysis, scale)
    figures = make_figures(analyses, training, out / "figures")
    seconds = time.perf_counter() - start
    metadata = run_metadata(
        "reproduce",
        {**asdict(config), "resolved_scale": asdict(scale)},
        config.seed,
        {"total": seconds, **{f"stage:{k}": v for k, v in store.seconds.items()}},
    )
    metadata["stages_reused"] = store.reused
    metadata["stages_computed"] = store.computed
    claims_json = [asdict(c) for c in claims]
    write_json(out / "claims.json", claims_json)
    record = {
        "scale": asdict(scale),
        "models": analyses,
        "training": training,
        "claims": claims_json,
        "figures": {k: str(v) for k, v in figures.items()},
        "metadata": metadata,
    }
    write_json(out / "reproduce.json", record)
    from lostmid.report.reproduce_report import build_report

    build_report(record, figures).write(out / "report.html")
    if console is not None:
        console.print(claims_table(claims))
        console.print(
            f"{len(store.computed)} stages computed, {len(store.reused)} reused, "
            f"{seconds:.0f} s; wrote {out / 'report.html'}, {out / 'claims.json'}"
        )
    return record


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when torch sees a GPU, else ``cpu``; others pass through
    (``lostmid.models.load_model`` checks them)."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return device


def _check_inputs(models: Sequence[str], scale: Scale, device: str) -> None:
    """Resolve every model spec, the device and the training preset before any work."""
    from lostmid.models.load import _check_device, _resolve
    from lostmid.train.config import preset

    _check_device(device)
    for model in models:
        _resolve(model)
    if scale.train_steps != 0:
        preset(scale.train_preset)


def training_stage(scale: Scale, seed: int, out: Path) -> dict[str, Any]:
    """Train the small model (``lostmid train``) into ``out/train`` and summarise its
    dynamics for the report: claims, a table per checkpoint, figure paths.

    An interrupted training is resumed from its last saved state; one left by another
    configuration is replaced (it lives under this run's ``--out``).
    """
    from lostmid.train.config import resolve_cli_config
    from lostmid.train.run import RESUME, run_training

    config = resolve_cli_config(scale.train_preset, None, steps=scale.train_steps, seed=seed)
    folder = out / "train"
    dynamics = None
    if (folder / RESUME).is_file():
        try:
            dynamics = run_training(config, folder, resume=True)
        except UserError:  # saved by another configuration
            dynamics = None
    if dynamics is None:
        dynamics = run_training(config, folder, overwrite=True)
    return summarise_training(dynamics, folder)


def summarise_training(dynamics: dict[str, Any], folder: Path) -> dict[str, Any]:
    """Claims, per-checkpoint table and figures of one training run."""
    from lostmid.train.claims import training_claims

    rows = []
    for c in dynamics["records"]:
        m = c.measurement
        if m is None:
            continue
        rows.append(
            {
                "step": c.step,
                "tokens": c.tokens_seen,
                "held-out loss": m.heldout_loss,
                "log10 peak/valley": m.influence_summary.log10_peak_to_valley,
                "Spearman vs predicted theory (jacobian)": m.influence_vs_theory[
                    "jacobian"
                ].spearman,
                "W1 vs predicted theory (jacobian)": m.influence_vs_theory["jacobian"].wasserstein1,
                "learning signal vs rho: Spearman": m.learning_signal_vs_rho.spearman,
                "learning signal vs rho: W1": m.learning_signal_vs_rho.wasserstein1,
            }
        )
    model = dynamics["model"]
    config = dynamics["config"]
    tps = dynamics.get("tokens_per_second")
    figures = {p.stem: p for p in sorted(folder.glob("*.png"))}
    source = dynamics["corpus"].get("source", "the corpus")
    speed = f"{tps:,.0f}" if tps else "?"
    return {
        "claims": training_claims(dynamics["records"]),
        "table": rows,
        "figures": {k: str(v) for k, v in figures.items()},
        "paragraphs": [
            f"A {model['family']}-style byte-level LM ({model['layers']} layers, hidden "
            f"{model['hidden']}, context {model['context']}, {model['parameters']:,} "
            f"parameters) trained for {config['steps']} steps on {source} ({speed} tokens/s). "
            "At each checkpoint: the influence profile on held-out text, the theory "
            "predicted from the residual strengths measured there, and the learning signal "
            "(norm of the gradient of the loss at "
            "the last position with respect to each input embedding) against rho_H.",
            f"Full dynamics: {folder / 'dynamics.json'}.",
        ],
    }


def training_claim_rows(training: dict[str, Any]) -> list[Any]:
    from lostmid.compare import Claim

    return [
        Claim(**{k: c[k] for k in ("claim", "paper", "ours", "verdict", "rule")})
        for c in training.get("claims", [])
    ]


def _slug(model: str) -> str:
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model).strip("_")


def _write_measure_json(path: Path, model: str, analysis: dict[str, Any], scale: Scale) -> None:
    """The seed-averaged profile in the measure.json layout, for ``lostmid compare``."""
    from lostmid.theory import summarize_profile

    on = analysis["on"]
    write_json(
        path,
        {
            "influence": on["influence"],
            "stderr": on["stderr"],
            "residual_strength": on["residual_strength"],
            "per_layer": None,
            "summary": summarize_profile(np.asarray(on["influence"])),
            "config": {
                **analysis["model"],
                "length": scale.length,
                "samples": scale.samples,
                "probes": scale.probes,
                "seeds": analysis["seeds"],
                "target": scale.length,
                "output": "hidden",
                "note": "average over seeds of the squared norms, then sqrt",
            },
        },
    )


def make_figures(
    analyses: dict[str, dict[str, Any]], training: dict[str, Any] | None, folder: Path
) -> dict[str, Path]:
    """All report figures as PNG files; returns name -> path."""
    from lostmid.compare.plot import plot_overlay
    from lostmid.report.plots import plot_depth_growth, plot_profiles, save_figure
    from lostmid.theory import influence_row

    folder.mkdir(parents=True, exist_ok=True)
    figures: dict[str, Path] = {}
    for model, a in analyses.items():
        slug = _slug(model)
        cands = a["candidates"]
        theories = {
            n: np.asarray(c["profile"]) for n, c in cands.items() if c["kind"] != "baseline"
        }
        baselines = {
            n: np.asarray(c["profile"]) for n, c in cands.items() if c["kind"] == "baseline"
        }
        fig = plot_overlay(
            np.asarray(a["on"]["influence"]),
            theories,
            baselines,
            stderr=np.asarray(a["on"]["stderr"]),
            title=f"{model} at step 0 (mean of {len(a['seeds'])} seeds): measured vs theory",
        )
        figures[f"overlay-{slug}"] = folder / f"overlay-{slug}.png"
        fig.savefig(figures[f"overlay-{slug}"], dpi=130)
        fig = plot_profiles(
            {
                "with positional encoding": np.asarray(a["on"]["influence"]),
                f"without ({a.get('switch')})": np.asarray(a["off"]["influence"]),
            },
            stderr={
                "with positional encoding": np.asarray(a["on"]["stderr"]),
                f"without ({a.get('switch')})": np.asarray(a["off"]["stderr"]),
            },
            title=f"{model}: influence with and without positional encoding (step 0)",
        )
        figures[f"positional-{slug}"] = save_figure(fig, folder / f"positional-{slug}.png")
        growth, depth = a.get("depth_growth"), a.get("depth_profiles")
        if growth and depth:
            per_layer = np.asarray(depth["per_layer"], dtype=np.float64)
            alphas = np.asarray(depth["residual_strength"])
            rows = np.stack(
                [
                    influence_row(per_layer.shape[1], h, alphas[:h], kernel="jacobian")
                    for h in range(1, per_layer.shape[0] + 1)
                ]
            )
            fig = plot_depth_growth(
                per_layer,
                rows,
                growth["jacobian"],
                title=f"{model}: growth with depth (seed {a['seeds'][0]})",
            )
            figures[f"depth-{slug}"] = save_figure(fig, folder / f"depth-{slug}.png")
    if training is not None:
        for name, path in training.get("figures", {}).items():
            figures[f"train-{name}"] = Path(path)
    return figures


def claims_table(claims: Sequence[Any]) -> Table:
    table = Table(title="claims", show_lines=False)
    for col in ("claim", "paper", "ours", "verdict"):
        table.add_column(col, overflow="fold")
    colors = {"reproduced": "green", "partly": "yellow", "not reproduced": "red"}
    for c in claims:
        table.add_row(c.claim, c.paper, c.ours, f"[{colors[c.verdict]}]{c.verdict}[/]")
    return table
