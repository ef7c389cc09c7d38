"""Structure and behaviour on real checkpoints (lostmid.reproduce.real_link): the claim
read from the link rule (yes, no, undecided), and the section end to end through
reproduce on a tiny BPE model standing in for a checkpoint, read back from its folder
with the same claims (the study's own parts: tests/behaviour/test_link.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cli_args import SECTIONS_OFF

from lostmid.behaviour.link.design import DEPTHS, PRETRAINED, LinkScale
from lostmid.behaviour.link.run import EXAMPLES, RESULT, link_run
from lostmid.behaviour.link.summary import summarise
from lostmid.errors import UserError
from lostmid.reproduce import real_link as rl
from lostmid.stats.verdicts import INCONCLUSIVE, NOT_REPRODUCED, REPRODUCED


def _records(right_by_depth: list[list[int]], share_by_depth: list[list[float]]) -> list[dict]:
    rows = []
    for depth, rights, shares in zip(DEPTHS, right_by_depth, share_by_depth, strict=True):
        for i, (r, s) in enumerate(zip(rights, shares, strict=True)):
            rows.append(
                {"model": PRETRAINED, "depth": depth, "index": i, "right": bool(r)}
                | {"jacobian_share": s, "gradient_share": 0.5, "answer_logp": -1.0}
            )
    return rows


def _design(per_depth: int) -> dict:
    return LinkScale("t", ("m",), 100, per_depth, 1).design("m", 0)


def test_the_claim_follows_the_link_rule_yes_no_and_undecided() -> None:
    n = 12
    u = [0.9, 0.5, 0.2, 0.5, 0.95]  # accuracy by depth: a U
    right = [[int(i < round(a * n)) for i in range(n)] for a in u]
    # the share follows the accuracy by depth and, at each depth, the right answers
    follows = [
        [a + 0.05 * r[i] + 0.001 * i for i in range(n)] for a, r in zip(u, right, strict=True)
    ]
    # a U of shares beside a U of accuracy, blind to which item is answered right: the
    # depth means correlate (any two U shapes do), the items do not
    blind = [
        [a + 0.05 * (1 - r[i]) + 0.001 * i for i in range(n)] for a, r in zip(u, right, strict=True)
    ]
    reversed_ = [[1 - a + 0.01 * (i % 3) for i in range(n)] for a in u]  # it runs against it
    yes = summarise(_records(right, follows), _design(n))
    no = summarise(_records(right, reversed_), _design(n))
    u_vs_u = summarise(_records(right, blind), _design(n))
    few = summarise(_records([r[:3] for r in right], [s[:3] for s in follows]), _design(3))
    assert u_vs_u["link"]["jacobian_share"]["across_depths"]["verdict"] == "supported"
    assert [rl.claim_verdict(s) for s in (yes, no, u_vs_u, few)] == [
        REPRODUCED,
        NOT_REPRODUCED,
        NOT_REPRODUCED,  # across depths alone cannot decide it
        INCONCLUSIVE,  # 3 a depth: below the rule's 5
    ]
    assert [r["correct"] for r in yes["by_depth"]] == [round(a * n) for a in u]
    # records beyond the design's count do not enter its summary
    assert summarise(_records(right, follows), _design(3))["by_depth"][0]["n"] == 3
    claims = rl.RealLink("constructed", (yes | {"folder": "x"},)).claims
    across = yes["link"]["jacobian_share"]["across_depths"]
    assert across["value"] > 0.9 and f"Spearman {across['value']:+.2f} [" in claims[0].ours
    assert claims[0].verdict == REPRODUCED


def test_the_section_runs_on_each_checkpoint_and_reads_it_back(
    bpe_model_dir: Path, tmp_path: Path, run_cli, monkeypatch
) -> None:
    scale = LinkScale("quick", (str(bpe_model_dir),), 600, 1, 1, twin_per_depth=1)
    monkeypatch.setitem(rl.LINK_SCALES, "quick", scale)
    args = ["--models", "tiny-gpt2", "--length", "16", "--seeds", "1", "--samples", "1"]
    args += ["--probes", "1", *SECTIONS_OFF, "--real-link", "quick", "--jobs", "1"]
    code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / "r")
    assert code == 0, err
    record = json.loads((tmp_path / "r" / "reproduce.json").read_text())
    (run,) = record["real_link"]["runs"]
    folder = Path(run["folder"])
    lines = (folder / EXAMPLES).read_text().splitlines()
    assert len(lines) == 2 * len(DEPTHS)  # the checkpoint and its twin, one a depth
    (claim,) = [c for c in record["claims"] if c["claim"] == rl.CLAIM]
    assert claim["verdict"] == INCONCLUSIVE  # one example a depth decides nothing
    saved = json.loads((folder / RESULT).read_text())
    assert saved["metadata"]["config"] == run["design"] and (folder / "link.png").stat().st_size
    html = (tmp_path / "r" / "report.html").read_text()
    assert rl.RealLinkPlugin.title in html
    # the finished folder and the run's own folder read back with the same claim
    for i, again in enumerate((tmp_path / "r" / "real-link" / "quick", folder)):
        args[-4:-2] = ["--real-link", str(again)]
        code, _, err = run_cli("reproduce", "--quick", *args, "--out", tmp_path / f"again{i}")
        assert code == 0, err
        back = json.loads((tmp_path / f"again{i}" / "reproduce.json").read_text())
        assert [c for c in back["claims"] if c["claim"] == rl.CLAIM] == [claim]
        # the runs it read are kept in its own folder, per-example rows included
        kept = tmp_path / f"again{i}" / "real-link" / rl.READ / folder.name
        assert (kept / EXAMPLES).read_text() == (folder / EXAMPLES).read_text()
        assert json.loads((kept / RESULT).read_text()) == saved
    # more examples a depth grow the run: the first ones are kept, not recomputed
    first = [json.loads(x) for x in lines]
    grown = link_run(LinkScale("quick", (str(bpe_model_dir),), 600, 2, 1).design(
        str(bpe_model_dir), 0), folder)  # fmt: skip
    kept = [json.loads(x) for x in (folder / EXAMPLES).read_text().splitlines()]
    assert kept[: len(first)] == first and len(kept) == 4 * len(DEPTHS)
    assert [r["n"] for r in grown["by_depth"]] == [2] * len(DEPTHS)
    code, _, err = run_cli(
        "reproduce", "--quick", "--real-link", str(tmp_path), "--out", tmp_path / "x"
    )
    assert code == 2 and "--real-link" in err and len(err.strip().splitlines()) == 1


def test_a_folder_of_another_kind_is_one_line(tmp_path: Path) -> None:
    (tmp_path / RESULT).write_text('{"a": 1}')
    with pytest.raises(UserError, match="not the result of a real-link run"):
        rl.RealLink.read(tmp_path)


def test_the_config_names_the_scales_the_section_has() -> None:
    from lostmid.reproduce.config import REAL_LINK_CHOICES

    assert (*rl.LINK_SCALES, "off") == REAL_LINK_CHOICES


def test_a_bad_value_names_the_sections_own_scales(tmp_path: Path, run_cli) -> None:
    code, _, err = run_cli("reproduce", "--real-link", str(tmp_path), "--out", tmp_path / "x")
    assert code == 2 and "not quick, default, off or a folder with */link.json" in err
