"""The one registry of capabilities: the command line and the sweep read it, so neither
can list a capability the other lacks or name it differently."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest

from lostmid.capabilities import CAPABILITIES, capability, commands, sweepable
from lostmid.errors import UserError


def test_the_cli_registers_exactly_the_registry_commands_in_its_order() -> None:
    from lostmid.cli import UTILITIES, app

    registered = [c.name for c in app.registered_commands]
    assert registered == [*commands(), *UTILITIES]  # then those that run nothing (list)
    for c in app.registered_commands[: len(commands())]:  # help: its capability's summary
        assert c.callback.__doc__ == next(x for x in CAPABILITIES if x.name == c.name).summary


def test_the_sweep_tasks_are_the_sweepable_capabilities() -> None:
    from lostmid.sweep.run import HELP
    from lostmid.sweep.units import TASKS

    assert list(TASKS) == [c.name for c in sweepable()]
    assert all(name in HELP["task"] for name in TASKS)


@pytest.mark.parametrize("cap", CAPABILITIES, ids=lambda c: c.name)
def test_each_capability_names_a_config_a_run_and_its_result_file(cap) -> None:
    assert inspect.isclass(cap.config_class())
    params = inspect.signature(cap.run_function()).parameters
    assert {"out", "overwrite", "console"} <= set(params)
    # the result file is the one its kind says the command writes
    assert cap.result_file in cap.result_kind.produced_by
    assert cap.command in commands()


def test_a_headline_is_read_back_from_the_result_file(tmp_path: Path) -> None:
    doc = {"claims": [{"verdict": "reproduced"}, {"verdict": "inconclusive"}]}
    (tmp_path / "reproduce.json").write_text(json.dumps(doc))
    assert capability("reproduce").headline_of(tmp_path) == {
        "file": "reproduce.json",
        "claims": 2,
        "reproduced": 1,
    }
    with pytest.raises(UserError, match="capability"):
        capability("nothing")
