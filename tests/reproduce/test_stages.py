"""A measure stage's pieces against direct measurements of a tiny model."""

from __future__ import annotations

import numpy as np

from lostmid.influence import influence_profile, random_token_ids
from lostmid.influence.gains import BranchGains, branch_gains
from lostmid.models import load_model
from lostmid.reproduce.stages import ProfileRun


def test_two_halves_joined_are_the_measurement_on_all_inputs() -> None:
    loaded = load_model("tiny-gpt2", seed=0)
    ids = random_token_ids(loaded.vocab_size, 3, 8, seed=0)

    def exact(rows):
        return influence_profile(loaded, rows, exact=True, per_layer=[1])

    whole, joined = exact(ids), ProfileRun.joined(exact(ids[:2]), exact(ids[2:]))
    np.testing.assert_allclose(joined.mean_sq, whole.mean_sq, rtol=1e-10)
    np.testing.assert_allclose(joined.influence, whole.influence, rtol=1e-10)
    np.testing.assert_allclose(joined.per_layer[0], whole.per_layer[0], rtol=1e-10)
    assert joined.samples == 3 and joined.halves.shape == (2, 8)
    np.testing.assert_allclose(joined.first_part(), exact(ids[:2]).influence, rtol=1e-12)


def test_branch_gains_survive_their_record() -> None:
    loaded = load_model("tiny-qwen2", seed=1)
    gains = branch_gains(loaded, random_token_ids(loaded.vocab_size, 1, 6, seed=1))
    back = BranchGains.from_record(gains.record())
    assert back.record() == gains.record()
