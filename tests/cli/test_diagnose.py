"""``lostmid diagnose``'s model: ``--model`` as on every command, or positional; a refusal
names the form the user typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import lostmid.reproduce.diagnose as diagnose


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The configs run_diagnose was called with (nothing runs)."""
    seen: list[Any] = []
    monkeypatch.setattr(diagnose, "run_diagnose", lambda config, **kw: seen.append(config))
    return seen


def test_the_option_and_the_positional_form_give_the_same_config(
    run_cli, captured: list[Any], tmp_path: Path
) -> None:
    for args in (("--model", "./m"), ("./m",), ("./m", "--model", "./m")):
        code, _, err = run_cli("diagnose", *args, "--scale", "quick", "--out", tmp_path)
        assert code == 0, err
    assert [c.model for c in captured] == ["./m"] * 3
    assert len({c for c in captured}) == 1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--model", "NOWHERE"), "error: --model NOWHERE: no such directory"),
        (("NOWHERE",), "error: MODEL NOWHERE: no such directory"),
        ((), "diagnose needs a model: --model MODEL"),
        (("a", "--model", "b"), "two models, --model b and a; give one of them"),
    ],
)
def test_a_refusal_names_what_the_user_typed(run_cli, tmp_path: Path, args, message) -> None:
    args = tuple(str(tmp_path / "nowhere") if a == "NOWHERE" else a for a in args)
    message = message.replace("NOWHERE", str(tmp_path / "nowhere"))
    code, _, err = run_cli("diagnose", *args, "--scale", "quick", "--out", tmp_path / "o")
    assert code == 2 and err.strip().splitlines() == [err.strip()]
    assert message in err
