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


def test_a_seed_measurement_survives_its_npz(tmp_path, make_seed) -> None:
    """The at-init npz gives back the stage record the stage store saves (arrays
    exactly, an undefined value as NaN, the model's facts as they were), and the claims
    judged from the read-back seeds are those of the originals."""
    from lostmid.reproduce.analysis import analyse_model
    from lostmid.reproduce.claims import model_claims
    from lostmid.reproduce.stages import read_at_init, read_at_init_folder, write_at_init
    from lostmid.runinfo import to_jsonable

    rng = np.random.default_rng(0)
    runs = []
    for seed in range(3):
        g = 0.2 + rng.random((2, 16))
        profile = np.linspace(3.0, 1.0, 16) * np.exp(0.1 * rng.standard_normal(16))
        layer1 = profile * 0.5
        half = (profile * 1.01, profile * 0.99)
        runs.append(
            make_seed(seed, g, profile, layer1=layer1, off=profile[::-1].copy(), halves=half)
        )
    for run in runs:
        write_at_init(run, tmp_path / "m" / f"seed-{run.seed}" / "at-init.npz")
    back = read_at_init_folder(tmp_path / "m")
    assert [r.seed for r in back] == [0, 1, 2]
    for a, b in zip(runs, back, strict=True):
        assert to_jsonable(b.record()) == to_jsonable(a.record())
        assert np.isnan(b.on.per_layer[1]).all()  # the unmeasured layer stays undefined
        np.testing.assert_array_equal(b.off.influence, a.off.influence)
    assert [c.record() for c in model_claims(analyse_model("m", back))] == [
        c.record() for c in model_claims(analyse_model("m", runs))
    ]
    assert read_at_init(tmp_path / "m" / "seed-1" / "at-init.npz").model["seed"] == 1
