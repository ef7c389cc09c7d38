from __future__ import annotations

from lostmid.train import training_claims


def _record(
    step: int,
    ptv: float,
    loss: float,
    s: float,
    w1: float,
    flat: float,
    mid: float = 10.0,
    primacy: float = 3.0,
) -> dict:
    return {
        "step": step,
        "peak_to_valley": ptv,
        "heldout_loss": loss,
        "influence": {
            "summary": {
                "peak_to_dead_zone": mid + step,
                "dead_zone_level": 1.0,
                "primacy": primacy,
                "recency": 5.0,
            }
        },
        "learning_signal": {"alpha_mean": 0.3},
        "distances": {"learning_signal_vs_rho": {"spearman": s, "w1": w1, "w1_uniform": flat}},
    }


def _dynamics(*records: dict) -> dict:
    return {"records": list(records)}


def test_valley_deepens_verdicts() -> None:
    deep = training_claims(
        _dynamics(_record(0, 100, 5.5, 0.9, 0.1, 0.3), _record(100, 1000, 2.0, 0.9, 0.1, 0.3))
    )
    assert deep[0]["verdict"] == "reproduced"
    assert "x10.00" in deep[0]["ours"]
    little = training_claims(
        _dynamics(_record(0, 100, 5.5, 0.9, 0.1, 0.3), _record(100, 150, 2.0, 0.9, 0.1, 0.3))
    )
    assert little[0]["verdict"] == "partly"
    flatter = training_claims(
        _dynamics(_record(0, 100, 5.5, 0.9, 0.1, 0.3), _record(100, 50, 2.0, 0.9, 0.1, 0.3))
    )
    assert flatter[0]["verdict"] == "not reproduced"
    no_learning = training_claims(
        _dynamics(_record(0, 100, 5.5, 0.9, 0.1, 0.3), _record(100, 1000, 5.4, 0.9, 0.1, 0.3))
    )
    assert no_learning[0]["verdict"] == "not reproduced"
    # the minimum deepened but the middle did not: only partly
    noisy = training_claims(
        _dynamics(
            _record(0, 100, 5.5, 0.9, 0.1, 0.3, mid=50),
            _record(100, 1000, 2.0, 0.9, 0.1, 0.3, mid=-80),
        )
    )
    assert noisy[0]["verdict"] == "partly"
    # deeper, but the primacy end fell into the middle: no longer a U, only partly
    one_sided = training_claims(
        _dynamics(
            _record(0, 100, 5.5, 0.9, 0.1, 0.3),
            _record(100, 1000, 2.0, 0.9, 0.1, 0.3, primacy=0.5),
        )
    )
    assert one_sided[0]["verdict"] == "partly"
    assert "primacy/dead zone 3 -> 0.5" in one_sided[0]["ours"]


def test_learning_signal_verdicts() -> None:
    def verdict(start: tuple[float, float, float], end: tuple[float, float, float]) -> str:
        d = _dynamics(_record(0, 10, 5, *start), _record(10, 10, 4, *end))
        return training_claims(d)[1]["verdict"]

    good, bad = (0.95, 0.05, 0.3), (0.3, 0.01, 0.3)
    assert verdict(good, good) == "reproduced"
    assert verdict(good, bad) == "partly"  # holds at init only
    assert verdict(bad, good) == "partly"
    assert verdict(bad, (0.95, 0.2, 0.3)) == "partly"  # ranks agree, W1 not well below flat
    assert verdict(bad, (0.6, 0.1, 0.3)) == "partly"
    assert verdict(bad, bad) == "not reproduced"
    assert verdict(bad, (0.95, 0.35, 0.3)) == "not reproduced"  # worse than a flat profile


def test_claims_keys_and_empty() -> None:
    claims = training_claims({"records": []})
    assert [c["verdict"] for c in claims] == ["not reproduced", "not reproduced"]
    for c in claims:
        assert {"claim", "paper", "ours", "verdict", "rule", "numbers"} <= set(c)
