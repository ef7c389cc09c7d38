"""The one measurement record: every gain from the producer's BranchGains, a lossless
round trip through measure.json, and one-line refusals of files of another kind."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from lostmid.errors import UserError
from lostmid.influence.gains import BranchGains
from lostmid.influence.record import (
    PER_LAYER,
    PER_LAYER_SIGNED,
    PER_POSITION,
    PER_POSITION_SIGNED,
    SCHEMA,
    MeasureRecord,
    read_measure,
    write_measure,
)
from lostmid.runinfo import run_metadata

H, L = 3, 6
RNG = np.random.default_rng(0)


def gains() -> BranchGains:
    per_position = 0.2 + RNG.random((H, L))
    coherence = RNG.random((H, L))
    coherence[1] = np.nan  # a zero MLP: undefined
    return BranchGains(
        gain=per_position.mean(1),
        per_position=per_position,
        residual_strength=per_position.mean(1) / (1 + per_position.mean(1)),
        mlp_gain=RNG.random(H),
        mlp_gain_per_position=RNG.random((H, L)),
        mlp_coherence=np.array([0.5, np.nan, 0.2]),
        mlp_coherence_per_position=coherence,
        samples=2,
        length=L,
        directions=4,
        exact=False,
        seed=0,
    )


def record(**changes: object) -> MeasureRecord:
    base = MeasureRecord.from_gains(
        influence=RNG.random(L) + 0.1,
        stderr=RNG.random(L) * 0.01,
        target=L,
        layers=H,
        gains=gains(),
        forward=RNG.random(H) * 0.1,
        facts={"model": "tiny", "length": L},
        metadata=run_metadata("test", {}, 0, {}),  # what a written file carries
    )
    return dataclasses.replace(base, **changes)


def test_from_gains_carries_every_gain_of_the_producer() -> None:
    r = record()
    for name in (*PER_LAYER, *PER_LAYER_SIGNED, *PER_POSITION, *PER_POSITION_SIGNED):
        assert getattr(r, name) is not None, name  # nothing a writer could forget
    g = gains()
    depth2 = MeasureRecord.from_gains(
        influence=np.ones(L), stderr=None, target=L, layers=H, depth=2, gains=g, forward=None
    )
    assert depth2.layers == 2 and depth2.gain_per_position.shape == (2, L)
    np.testing.assert_array_equal(depth2.mlp_gain_per_position, g.mlp_gain_per_position[:2])
    forward = MeasureRecord.from_gains(
        influence=np.ones(L), stderr=None, target=L, layers=H, gains=g,
        forward=np.full(H, 0.1), strength="forward",
    )  # fmt: skip
    assert forward.residual_strength_method == "forward"
    np.testing.assert_array_equal(forward.residual_strength, np.full(H, 0.1))


def test_round_trip_through_the_file_is_lossless(tmp_path: Path) -> None:
    r = record()
    back = read_measure(write_measure(tmp_path / "measure.json", r))
    for f in dataclasses.fields(MeasureRecord):
        if f.name in ("source", "facts"):
            continue
        a, b = getattr(r, f.name), getattr(back, f.name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, err_msg=f.name)  # NaN == NaN here
        else:
            assert a == b, f.name
    assert back.facts["model"] == "tiny" and back.source == str(tmp_path / "measure.json")
    data = json.loads((tmp_path / "measure.json").read_text())
    assert data["schema"] == SCHEMA and data["config"]["layers"] == H


def test_pooling_averages_every_array_and_keeps_undefined_nan() -> None:
    a, b = record(), record()
    pooled = a.pooled_with([b], np.ones(L), None, "2 seeds pooled")
    np.testing.assert_allclose(
        pooled.gain_per_position, (a.gain_per_position + b.gain_per_position) / 2
    )
    assert (
        np.isnan(pooled.mlp_coherence[1]) and np.isnan(pooled.mlp_coherence_per_position[1]).all()
    )
    assert pooled.mlp_gain_per_position is not None and pooled.source == "2 seeds pooled"


def test_files_of_another_kind_are_one_line(tmp_path: Path) -> None:
    theory = tmp_path / "theory.json"
    theory.write_text(json.dumps({"schema": "lostmid.theory/1", "influence": [1, 2]}))
    with pytest.raises(
        UserError, match=r"a theory result \(schema lostmid.theory/1\), not a measure"
    ):
        read_measure(theory)
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"influence": [1.0, -1.0], "config": {"layers": 1}}))
    with pytest.raises(UserError, match="negative value at position 2"):
        read_measure(bad)
    old = tmp_path / "old.json"  # no schema: files written by hand or before it still load
    old.write_text(json.dumps({"influence": [2.0, 1.0, 3.0], "config": {"layers": 2}}))
    assert read_measure(old).layers == 2 and read_measure(old).target == 3
