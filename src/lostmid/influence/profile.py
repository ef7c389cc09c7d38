"""The influence profile record and how per-sample statistics pool into it (numpy only).

With S input samples and P probes per sample, the estimator (:mod:`~lostmid.influence.
estimator`) hands over, per sample s and position j, the mean m_s = mean_p z_{s,p} of
the probe estimates z_{s,p} of ||J_{s,j}||_F^2 (and their within-sample variance when
P > 1). They pool into

    m_j = mean_s m_s,    influence_j = sqrt(m_j),
    se(m)^2 = var_s(m_s) / S,    se(sqrt m) = se(m) / (2 sqrt m)   (delta method);

with one sample only the probe part is known: se(m)^2 = var_probe / P (said in
``stderr_basis``). Variance split (per position, units of the squared norm), with the
nested design z_{s,p} = mu + (M_s - mu) + (z_{s,p} - M_s):

    var_probe  = E_s Var_v(z | s)  (estimated by the mean within-sample variance),
    var_sample = Var_s(M_s)        (estimated by var_s(m_s) - var_probe / P),
    Var(m) = var_sample / S + var_probe / (S P).

No torch here: configs check the estimator's options (``OUTPUTS``, ``STRATEGIES``,
``PROBE_KINDS``) against this module without loading it, so ``lostmid --help`` stays fast.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

OUTPUTS = ("hidden", "residual", "logits", "top1-prob")
STRATEGIES = ("loop", "vmap")
PROBE_KINDS = ("rademacher", "gaussian")


@dataclass(frozen=True)
class InfluenceProfile:
    """A measured influence profile; arrays are indexed by position j-1 (j = 1..L).

    Attributes:
        influence: (L,) sqrt of the mean over samples and probes of ||v^T J_j||^2.
        stderr: (L,) standard error of ``influence`` (delta method).
        mean_sq: (L,) the unbiased estimate m_j of E ||J_j||_F^2.
        stderr_sq: (L,) standard error of ``mean_sq``.
        per_layer: (H, L) influence on the residual stream after each layer
            l = 1..H (row l-1), or None.
        var_probe: (L,) within-sample (probe) variance of z; 0 in exact mode or for
            ``top1-prob``; NaN when P = 1.
        var_sample: (L,) between-sample variance of the per-sample squared norm; NaN
            when S = 1.
        target: the target position t, 1-indexed.
    """

    influence: np.ndarray
    stderr: np.ndarray
    mean_sq: np.ndarray
    stderr_sq: np.ndarray
    per_layer: np.ndarray | None
    var_probe: np.ndarray
    var_sample: np.ndarray
    samples: int
    probes: int
    output: str
    target: int
    exact: bool
    probe_kind: str
    stderr_basis: str

    @property
    def relative_stderr(self) -> np.ndarray:
        """(L,) stderr / influence, NaN where the influence is 0 (causally masked)."""
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(self.influence > 0, self.stderr / self.influence, np.nan)

    def best_probes_per_sample(self, cost_ratio: float = 1.0) -> float | None:
        """P* = sqrt(median(var_probe / var_sample) * cost_ratio), cost_ratio = c_sample/c_probe."""
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = self.var_probe / self.var_sample
        ratio = ratio[np.isfinite(ratio) & (ratio > 0)]
        if ratio.size == 0:
            return None
        return float(np.sqrt(np.median(ratio) * cost_ratio))


@dataclass(frozen=True)
class BatchStats:
    """What one forward pass over B samples contributes (arrays float64 on CPU)."""

    means: np.ndarray  # (B, L): m_s = mean_p z_{s,p}
    within: np.ndarray | None  # (B, L): within-sample variance of z (P > 1), else None
    layer_sums: np.ndarray  # (H, L): sum over the B samples of mean_p z for each layer


def pool_batches(
    stats: Sequence[BatchStats],
    wanted: set[int],
    *,
    probes: int,
    output: str,
    target: int,
    exact: bool,
    probe_kind: str,
) -> InfluenceProfile:
    """The profile of the samples in ``stats`` (see :func:`summarise_samples`)."""
    means = np.concatenate([b.means for b in stats])  # (S, L)
    within = [b.within for b in stats if b.within is not None]
    layer_means = None
    if wanted:
        layer_sums = np.sum([b.layer_sums for b in stats], axis=0)  # (H, L)
        layer_means = only_layers(layer_sums / means.shape[0], wanted)
    return summarise_samples(
        means,
        np.concatenate(within) if within else None,
        layer_means,
        probes=probes,
        output=output,
        target=target,
        exact=exact or output == "top1-prob",
        probe_kind=probe_kind,
    )


def max_relative_stderr(profile: InfluenceProfile) -> float:
    """max_j stderr_j / influence_j over positions with influence > 0 (inf when none)."""
    relative = profile.relative_stderr
    return float(np.nanmax(relative)) if np.isfinite(relative).any() else float("inf")


def summarise_samples(
    means: np.ndarray,
    within: np.ndarray | None,
    layer_means: np.ndarray | None,
    *,
    probes: int,
    output: str,
    target: int,
    exact: bool,
    probe_kind: str,
) -> InfluenceProfile:
    """Pool per-sample statistics (S, L) into the profile, its error and the variance split.

    ``means`` (S, L) holds m_s, ``within`` (S, L) the within-sample variance of z (or
    None), ``layer_means`` (H, L) the per-layer mean squared norms (or None); the
    formulas are in the module docstring.

    >>> p = summarise_samples(np.array([[4.0, 1.0], [4.0, 3.0]]), None, None, probes=1,
    ...     output="hidden", target=2, exact=True, probe_kind="rademacher")
    >>> p.influence.tolist(), p.stderr_sq.tolist(), p.stderr.tolist()
    ([2.0, 1.4142135623730951], [0.0, 1.0], [0.0, 0.35355339059327373])
    """
    samples, length = means.shape
    mean_sq = means.mean(0)  # (L,)
    if exact:
        var_probe = np.zeros(length)
    elif within is not None:
        var_probe = within.mean(0)
    else:
        var_probe = np.full(length, np.nan)
    p_eff = 1 if exact else probes
    if samples > 1:
        between = means.var(0, ddof=1)  # var_s(m_s): Var(m) = between / S
        var_sample = np.maximum(between - np.nan_to_num(var_probe) / p_eff, 0.0)
        stderr_sq = np.sqrt(between / samples)
        basis = "samples"
    else:
        var_sample = np.full(length, np.nan)
        stderr_sq = np.sqrt(var_probe / p_eff) if np.all(np.isfinite(var_probe)) else var_probe
        basis = "probes only (one sample: input-to-input variance unknown)"
    influence = np.sqrt(mean_sq)
    with np.errstate(divide="ignore", invalid="ignore"):
        stderr = np.where(influence > 0, stderr_sq / (2 * influence), 0.0)
    return InfluenceProfile(
        influence=influence,
        stderr=stderr,
        mean_sq=mean_sq,
        stderr_sq=stderr_sq,
        per_layer=None if layer_means is None else np.sqrt(layer_means),
        var_probe=var_probe,
        var_sample=var_sample,
        samples=samples,
        probes=probes,
        output=output,
        target=target,
        exact=exact,
        probe_kind=probe_kind,
        stderr_basis=basis,
    )


def only_layers(layer_means: np.ndarray, wanted: set[int]) -> np.ndarray:
    """Rows of layers that were not measured become NaN (layer l is row l-1)."""
    out = np.full_like(layer_means, np.nan)
    for layer in wanted:
        out[layer - 1] = layer_means[layer - 1]
    return out
