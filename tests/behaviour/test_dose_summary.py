"""The dose-response summary (readouts 1-5) on hand-made runs with known answers."""

from __future__ import annotations

import math

import numpy as np
import pytest

from lostmid.behaviour.dose.summary import DoseRun, DoseSummary, rho_over_records
from lostmid.errors import UserError
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_SUPPORTED, SUPPORTED

DOSE = {2: 1.0, 4: 2.0, 8: 3.0}  # S by depth, + 0.1 per seed


@pytest.fixture
def design(made_dose_run):  # type: ignore[no-untyped-def]
    """The 3 depths x 3 seeds design, B = response x S + 0.05 seed (per seed, B grows
    with S at exactly ``response``)."""

    def make(response: float, *, final: float = 1.0) -> list[DoseRun]:
        return [
            made_dose_run(
                h, s, DOSE[h] + 0.1 * s, response * (DOSE[h] + 0.1 * s) + 0.05 * s, final=final
            )
            for h in DOSE
            for s in range(3)
        ]

    return make


def test_readouts_recover_what_the_runs_were_made_with(design) -> None:
    runs = design(0.5)
    record = DoseSummary(tuple(runs)).record()
    arms = {a["arm"]: a for a in record["arms"]}
    assert list(arms) == ["H=2", "H=4", "H=8"]
    for h, arm in ((h, arms[f"H={h}"]) for h in DOSE):
        s_values = [DOSE[h] + 0.1 * s for s in range(3)]
        assert arm["structural"]["primacy"]["estimate"] == pytest.approx(np.mean(s_values))
        b_values = [0.5 * v + 0.05 * s for s, v in enumerate(s_values)]
        assert arm["learning"]["order"]["estimate"] == pytest.approx(np.mean(b_values))
        assert arm["structural"]["span"]["estimate"] == pytest.approx(
            np.mean([math.exp(v) for v in s_values])
        )
        assert arm["final"]["mean"]["estimate"] == pytest.approx(1.0)
        assert arm["final"]["gap"]["estimate"] == pytest.approx(0.0)
        # eta = 2 x influence = 2 x rho: same shape, Spearman 1, W1 0
        assert arm["signal"]["eta_vs_rho"]["spearman"]["estimate"] == pytest.approx(1.0)
        assert arm["signal"]["eta_vs_influence"]["w1"]["estimate"] == pytest.approx(0.0, abs=1e-12)
        assert arm["cpu_seconds"]["estimate"] == pytest.approx(10.0 * h)
    verdict = record["dose_response"]
    assert verdict["verdict"] == SUPPORTED
    # per seed, B = 0.5 S + const over depths: every seed's slope is 0.5
    assert verdict["seed_slopes"] == pytest.approx([0.5, 0.5, 0.5])


def test_a_flat_response_is_not_supported_and_runs_that_did_not_learn_do_not_count(
    design,
) -> None:
    assert DoseSummary(tuple(design(0.0))).verdict().verdict == NOT_SUPPORTED
    # final accuracy 0.3 < LEARNT: no run has B, whatever its curves say
    verdict = DoseSummary(tuple(design(0.5, final=0.3))).verdict()
    assert verdict.verdict == INCONCLUSIVE and verdict.slope is None


def test_variants_are_paired_with_the_base_arm_of_their_depth(design, made_dose_run) -> None:
    runs = design(0.5)
    runs += [made_dose_run(8, s, 3.0 + 0.1 * s, 0.0, variant="no-rope") for s in range(3)]
    summary = DoseSummary(tuple(runs))
    (variant,) = summary.variants()
    assert variant["arm"] == "H=8 no-rope" and variant["against"] == "H=8"
    base_b = [0.5 * (3.0 + 0.1 * s) + 0.05 * s for s in range(3)]
    assert variant["order"]["estimate"] == pytest.approx(-np.mean(base_b))
    assert variant["structural_primacy"]["estimate"] == pytest.approx(0.0, abs=1e-12)
    # the verdict reads the base arms only
    assert summary.verdict().verdict == SUPPORTED


def test_the_record_round_trips(design) -> None:
    summary = DoseSummary(tuple(design(0.5)))
    again = DoseSummary.from_record(summary.record())
    assert again.record()["arms"] == summary.record()["arms"]


def test_rho_over_records_is_the_continuum_row_averaged_over_spans() -> None:
    from lostmid.theory.continuum import continuum_row

    row = continuum_row(12, 3, np.array([0.2, 0.3, 0.4]))
    got = rho_over_records(12, [(1, 3), (5, 8)], [0.2, 0.3, 0.4])
    assert got == pytest.approx([row[1:3].mean(), row[5:8].mean()])


def test_bad_designs_are_one_line(made_dose_run) -> None:
    with pytest.raises(UserError, match="at least one run"):
        DoseSummary(())
    other = made_dose_run(2, 0, 1.0, 0.0)
    fewer = DoseRun(**{**other.__dict__, "influence_init": (1.0, 0.5)})
    with pytest.raises(UserError, match="the same records"):
        DoseSummary((other, fewer))


def test_the_figure_says_why_a_panel_is_empty_instead_of_showing_an_empty_axis(
    made_dose_run,
) -> None:
    from lostmid.behaviour.dose.run import plot_dose
    from lostmid.behaviour.dose.summary import DoseSummary

    learnt = [made_dose_run(h, s, 1.0 + h / 4, 0.2) for h in (2, 4) for s in range(2)]
    axes = plot_dose(DoseSummary(tuple(learnt)).record()).axes
    assert not axes[1].texts and not axes[2].texts  # (b) and (c) have their points
    # final accuracy 0: no record ever reaches half of it, no learning time, no order
    flat = [made_dose_run(h, s, 1.0 + h / 4, 0.2, final=0.0) for h in (2, 4) for s in range(2)]
    axes = plot_dose(DoseSummary(tuple(flat)).record()).axes
    assert "no learning times" in axes[1].texts[0].get_text()
    assert "no run has a fitted order" in axes[2].texts[0].get_text()
