"""The behavioural claim of reproduce on runs built so that the rule's answer is known."""

from __future__ import annotations

import numpy as np
import pytest

from lostmid.reproduce.behaviour import (
    Behaviour,
    BehaviourCheckpoint,
    BehaviourSeed,
    has_valley,
    link_claim,
)

N = 200  # examples per gold index: intervals of about +-0.07 near 0.5


def run(seed: int, final_accuracy, init_influence, final_influence=None) -> BehaviourSeed:
    acc = np.asarray(final_accuracy, dtype=float)
    n = (N,) * acc.size
    chance = BehaviourCheckpoint(0, (N // 10,) * acc.size, n, tuple(init_influence))
    end = BehaviourCheckpoint(
        500,
        tuple(int(round(a * N)) for a in acc),
        n,
        tuple(init_influence if final_influence is None else final_influence),
    )
    return BehaviourSeed(
        seed, "test", acc.size, "uniform", 1000, (chance, end), 1.0, f"x/seed-{seed}"
    )


U_ACC = [0.9, 0.6, 0.3, 0.5, 0.8]  # valley in the middle, resolved at N = 200
U_INFLUENCE = [5.0, 3.0, 1.0, 2.0, 4.0]  # same ranks as U_ACC: Spearman 1


def test_a_valley_is_resolved_only_when_both_ends_stand_above_the_middle() -> None:
    assert has_valley(run(0, U_ACC, U_INFLUENCE).final)
    assert not has_valley(run(0, [0.9, 0.7, 0.5, 0.3, 0.1], U_INFLUENCE).final)  # monotone
    assert not has_valley(run(0, [0.52, 0.5, 0.48, 0.5, 0.52], U_INFLUENCE).final)  # noise


TAIL = [5.0, 3.0, 2.0, 1.6, 1.4]  # a monotone primacy tail: no structural valley
VALLEY = [5.0, 3.0, 1.0, 2.0, 4.0]  # a structural valley
NOISE = [0.01, -0.01, 0.005]  # per seed, so that intervals over seeds have a width


def seeds_of(accuracy, influence, gold: str = "uniform") -> list[BehaviourSeed]:
    out = []
    for s, e in enumerate(NOISE):
        r = run(s, np.clip(np.asarray(accuracy) + e, 0, 1), np.asarray(influence) * (1 + e))
        out.append(BehaviourSeed(**{**r.__dict__, "gold": gold}))
    return out


def test_link_claim_judges_the_predicted_contrasts_not_a_rank_correlation() -> None:
    """Issue 16, part 2: the structure over the records is a primacy tail, so the theory
    predicts primacy without recency; a textbook valley (0.9 / 0.3 / 0.9) contradicts it,
    whatever the rank correlation said (it scored such a valley 0.00)."""
    textbook = link_claim(seeds_of([0.9, 0.6, 0.3, 0.6, 0.9], TAIL))
    assert textbook.verdict == "not reproduced"
    assert "recency none: no structural valley (contradicts)" in textbook.ours
    lopsided = link_claim(seeds_of([0.9, 0.6, 0.3, 0.5, 0.7], TAIL))  # was 'partly'
    assert lopsided.verdict == "not reproduced"
    # primacy without recency, as the tail predicts: reproduced
    falling = link_claim(seeds_of([0.9, 0.7, 0.5, 0.4, 0.3], TAIL))
    assert falling.verdict == "reproduced"
    # a structural valley and a behavioural one: reproduced; behaviour flat at the end
    # of a valley structure: recency unresolved at N = 200 -> inconclusive
    assert link_claim(seeds_of(U_ACC, VALLEY)).verdict == "reproduced"
    assert link_claim(seeds_of([0.9, 0.6, 0.3, 0.3, 0.3], VALLEY)).verdict == "inconclusive"
    # recency against the structure's direction (the middle above the first record)
    assert link_claim(seeds_of([0.2, 0.5, 0.8, 0.5, 0.2], TAIL)).verdict == "not reproduced"


def test_link_claim_below_resolution_and_the_data_law_caveat() -> None:
    flat_structure = [run(s, U_ACC, [1.0 + e, 1.0, 1.0 - e, 1.0, 1.0])
                      for s, e in enumerate((0.01, -0.01, 0.0))]  # fmt: skip
    assert link_claim(flat_structure).verdict == "below resolution"
    assert link_claim(seeds_of(U_ACC, VALLEY)[:1]).verdict == "below resolution"  # one seed
    law = link_claim(seeds_of([0.9, 0.6, 0.3, 0.6, 0.9], TAIL, gold="beta:0.3"))
    assert "cannot show that the structure causes it" in law.ours
    assert "S_end (the trained model's own influence)" in law.ours  # shown beside


def test_pooling_and_records() -> None:
    seeds = (run(0, U_ACC, U_INFLUENCE), run(1, [0.7, 0.5, 0.5, 0.5, 0.7], [1.0] * 5))
    behaviour = Behaviour(seeds)
    pooled = behaviour.pooled(1)
    assert [p.correct for p in pooled] == [320, 220, 160, 200, 300]
    assert all(p.n == 2 * N for p in pooled)
    # each seed's influence normalised to sum 1 before averaging
    expected = (np.array(U_INFLUENCE) / 15 + np.full(5, 0.2)) / 2
    assert behaviour.mean_influence(0) == pytest.approx(expected)
    rows = behaviour.table()
    assert [r["step"] for r in rows] == [0, 500]
    assert rows[1]["accuracy by gold index (pooled)"] == "0.80 0.55 0.40 0.50 0.75"
    assert BehaviourSeed.from_record(seeds[0].record()) == seeds[0]
    with pytest.raises(ValueError, match="share their evaluation steps"):
        Behaviour(
            (seeds[0], BehaviourSeed(2, "t", 5, "uniform", 1, seeds[0].checkpoints[:1], 1.0, "x"))
        )


def test_the_presets_named_without_torch_are_the_retrieval_presets() -> None:
    from lostmid.behaviour import RETRIEVAL_PRESETS
    from lostmid.behaviour.training.names import RETRIEVAL_PRESET_NAMES
    from lostmid.remedies.config import PRESETS
    from lostmid.reproduce.config import BEHAVIOUR_PRESETS, SCALES

    assert set(RETRIEVAL_PRESET_NAMES) <= set(RETRIEVAL_PRESETS)
    assert RETRIEVAL_PRESET_NAMES == BEHAVIOUR_PRESETS == PRESETS
    assert all(s.behaviour_preset in BEHAVIOUR_PRESETS for s in SCALES.values())
