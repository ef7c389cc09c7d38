"""One ``--seeds`` grammar in every command (lostmid.checks.parse_seeds): a bare count N
is the seeds --seed .. --seed + N - 1, a range or list names the seeds; the configs of
reproduce, ablate and remedies take either and every caller reads one seed set."""

from __future__ import annotations

import pytest

from lostmid.ablate.config import AblationConfig
from lostmid.checks import seed_arg, seed_set
from lostmid.errors import UserError
from lostmid.remedies.config import RemediesConfig
from lostmid.reproduce.config import ReproduceConfig


@pytest.mark.parametrize(
    ("text", "first", "seeds"),
    [("3", 5, (5, 6, 7)), ("0-2,7", 5, (0, 1, 2, 7)), ("4,4,1", 0, (4, 1))],
)
def test_a_count_counts_from_the_first_seed_and_a_list_names_seeds(
    text: str, first: int, seeds: tuple[int, ...]
) -> None:
    assert seed_set(seed_arg(text), first) == seeds


@pytest.mark.parametrize("text", ["0", "-1", "2-1", "a", "", "1,,2"])
def test_a_bad_seed_text_is_one_line(text: str) -> None:
    with pytest.raises(UserError, match="--seeds"):
        seed_set(seed_arg(text), 0)


def test_every_command_reads_the_same_seed_set() -> None:
    assert AblationConfig(model="tiny-qwen2", seeds=(3, 9)).seed_list() == [3, 9]
    assert AblationConfig(model="tiny-qwen2", seeds=2, seed=4).seed_list() == [4, 5]
    assert RemediesConfig(seeds=(1, 8)).resolved_seeds() == (1, 8)
    assert RemediesConfig(seeds=None, seed=2).resolved_seeds() == (2, 3, 4)  # the scale's 3
    config = ReproduceConfig.at_scale("quick", seeds=(2, 5), train_seeds=(7,), seed=1)
    assert config.seeds() == [2, 5] and config.train_seeds() == [7]
    assert config.behaviour_seeds() == [1, 2]  # the quick scale's count (2) from --seed
    # a count keeps the record it always had (a finished run still resumes)
    assert AblationConfig(model="tiny-qwen2", seeds=2).record()["seeds"] == 2
    with pytest.raises(UserError, match="--seeds"):
        AblationConfig(model="tiny-qwen2", seeds=())


@pytest.mark.parametrize("command", ["reproduce", "ablate", "remedies"])
def test_the_cli_takes_the_grammar_and_refuses_a_bad_one_in_one_line(run_cli, command) -> None:
    model = ["--model", "tiny-qwen2"] if command == "ablate" else []
    code, _, err = run_cli(command, *model, "--seeds", "3-1", "--out", "/nonexistent/never")
    assert code == 2 and "--seeds '3-1' is not a seed list" in err
    assert len(err.strip().splitlines()) == 1
