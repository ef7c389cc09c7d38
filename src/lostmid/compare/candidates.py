"""Every candidate profile for one measurement, with its metrics: the given theory,
the predicted and the fitted theory for each kernel, and the naive baselines."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from lostmid.checks import check_choice
from lostmid.compare.baselines import fit_baselines
from lostmid.compare.fit import TheoryFit, fit_theory, predict_theory
from lostmid.compare.inputs import MeasuredProfile, TheoryProfile
from lostmid.compare.metrics import ProfileComparison, compare_profiles
from lostmid.errors import UserError
from lostmid.theory import KERNELS

KINDS = ("theory", "predicted", "fitted", "baseline")


@dataclass(frozen=True)
class Candidate:
    """One profile set beside the measurement.

    Attributes:
        name: unique key: ``theory``, ``predicted:<kernel>``, ``fitted:<kernel>`` or
            ``baseline:<name>``.
        kind: one of ``KINDS``.
        kernel: the theory kernel, None for baselines.
        description: one line for tables and legends.
        parameters: the parameters it was made with (fitted values included).
        parameter_count: parameters fitted to this measurement (0: a true prediction).
        profile: (L,) the profile on the measured scale.
        metrics: its :class:`ProfileComparison` against the measurement.
    """

    name: str
    kind: str
    kernel: str | None
    description: str
    parameters: dict[str, Any]
    parameter_count: int
    profile: np.ndarray
    metrics: ProfileComparison

    def record(self) -> dict[str, Any]:
        """The JSON layout of one candidate (compare.json, reproduce.json)."""
        return {
            "kind": self.kind,
            "kernel": self.kernel,
            "description": self.description,
            "parameter_count": self.parameter_count,
            "parameters": self.parameters,
            "metrics": self.metrics.record(),
            "profile": self.profile,
        }


def parse_kernels(kernel: str) -> tuple[str, ...]:
    """``rollout``, ``jacobian`` or ``both`` as a tuple of kernels.

    >>> parse_kernels("both")
    ('rollout', 'jacobian')
    """
    if kernel == "both":
        return KERNELS
    return (check_choice("--kernel", kernel, (*KERNELS, "both")),)


def compare_measurement(
    measured: MeasuredProfile,
    theory: TheoryProfile | None = None,
    predict: bool = False,
    kernels: Sequence[str] = KERNELS,
    baselines: bool = True,
) -> dict[str, Candidate]:
    """Build and score every candidate against ``measured``, in a stable order:
    the given theory, predicted (per kernel), fitted (per kernel), baselines.

    Raises :class:`UserError` when the theory and the measurement disagree on the
    length or the target, or when ``predict`` is asked without measured residual
    strengths.
    """
    m, t = measured.influence, measured.target
    out: dict[str, Candidate] = {}

    def add(
        cand_name: str,
        kind: str,
        kernel: str | None,
        description: str,
        parameters: dict[str, Any],
        count: int,
        profile: np.ndarray,
    ) -> None:
        out[cand_name] = Candidate(
            name=cand_name,
            kind=kind,
            kernel=kernel,
            description=description,
            parameters=parameters,
            parameter_count=count,
            profile=profile,
            metrics=compare_profiles(profile, m, target=t),
        )

    if theory is not None:
        if theory.length != measured.length:
            raise UserError(
                f"theory has L = {theory.length} positions but the measurement has "
                f"L = {measured.length}; compute the theory at --length {measured.length}"
            )
        if theory.target != t:
            raise UserError(
                f"theory targets position {theory.target} but the measurement targets {t}; "
                f"compute the theory with --target {t}"
            )
        scale = _log_scale(theory.influence, m)
        add(
            "theory",
            "theory",
            theory.kernel,
            f"theory file ({theory.kernel or 'unknown'} kernel)",
            {**theory.params, "scale": scale},
            0,
            scale * theory.influence,
        )

    if predict:
        if measured.residual_strength is None:
            raise UserError(
                "--predict needs the measured residual strengths ('residual_strength' in "
                "measure.json); measure them or pass --theory instead"
            )
        for kernel in kernels:
            fit = predict_theory(
                measured.length,
                measured.residual_strength,
                kernel,
                target=t,
                mask=measured.mask,
                measured=m,
            )
            add(
                f"predicted:{kernel}",
                "predicted",
                kernel,
                f"theory, measured a_l, {kernel} kernel (nothing fitted)",
                _fit_parameters(fit),
                fit.parameter_count,
                fit.profile,
            )

    for kernel in kernels:
        fit = fit_theory(m, measured.layers, kernel, target=t, mask=measured.mask)
        add(
            f"fitted:{kernel}",
            "fitted",
            kernel,
            f"theory, constant a = {fit.alpha:.3f} fitted, {kernel} kernel",
            _fit_parameters(fit),
            fit.parameter_count,
            fit.profile,
        )

    if baselines:
        for name, base in fit_baselines(m, target=t).items():
            add(
                f"baseline:{name}",
                "baseline",
                None,
                f"baseline {name}: {base.formula}",
                dict(base.parameters),
                base.parameter_count,
                base.profile,
            )
    return out


def _fit_parameters(fit: TheoryFit) -> dict[str, Any]:
    return {
        "method": fit.method,
        "kernel": fit.kernel,
        "layers": fit.layers,
        "alpha": fit.alpha,
        "alphas": fit.alphas.tolist(),
        "scale": fit.scale,
        "log10_rmse": fit.log10_rmse,
    }


def _log_scale(theory: np.ndarray, measured: np.ndarray) -> float:
    """exp(mean ln(m_j / T_j)) over positions where both are > 0 (see compare.fit)."""
    both = (theory > 0) & (measured > 0)
    if not both.any():
        return 1.0
    return float(np.exp(np.mean(np.log(measured[both]) - np.log(theory[both]))))
