"""A full disk: a small tmpfs as ``--out``. Every command stops with one line and exit
2, leaves no half-written file under a real name and no temporary behind, and once
there is room again the same command finishes with what an uninterrupted run writes.
Skipped where a tmpfs cannot be mounted (not root, no mount namespace)."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from harness import differences, is_temporary, snapshot, unreadable_json
from hostile import assert_one_line

RunCli = Callable[..., tuple[int, str, str]]


@dataclass
class Disk:
    path: Path

    def resize(self, size: str) -> None:
        subprocess.run(["mount", "-o", f"remount,size={size}", str(self.path)], check=True)


@pytest.fixture
def small_disk(tmp_path: Path) -> Iterator[Disk]:
    path = tmp_path / "disk"
    path.mkdir()
    try:
        subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=8k", "tmpfs", str(path)],
            check=True,
            capture_output=True,
        )
    except (OSError, subprocess.CalledProcessError) as err:
        pytest.skip(f"cannot mount a tmpfs here ({err})")
    try:
        yield Disk(path)
    finally:
        subprocess.run(["umount", "-l", str(path)], check=False)


def left_behind(out: Path) -> list[str]:
    """Half-written files under real names and writers' temporaries."""
    temporaries = [str(p) for p in out.rglob("*") if is_temporary(p)] if out.exists() else []
    return temporaries + (unreadable_json(out) if out.exists() else [])


def test_measure_on_a_full_disk(small_disk: Disk, run_cli: RunCli) -> None:
    out = small_disk.path / "m"
    args = ["measure", "--model", "tiny-gpt2", "--length", "16", "--samples", "1"]
    code, stdout, err = run_cli(*args, "--probes", "1", "--out", out)
    assert_one_line(code, stdout, err, "measure.json", "no space left on the device")
    assert left_behind(small_disk.path) == []
    small_disk.resize("20m")
    assert run_cli(*args, "--probes", "1", "--out", out)[0] == 0


def test_a_sweep_that_fills_the_disk_resumes_to_the_same_result(
    small_disk: Disk, run_cli: RunCli, tmp_path: Path
) -> None:
    args = ["sweep", "--task", "theory", "--lengths", "8,16,32,64,128", "--param", "layers=2"]
    assert run_cli(*args, "--out", tmp_path / "reference")[0] == 0
    small_disk.resize("160k")  # some units fit, then the disk is full
    out = small_disk.path / "s"
    code, stdout, err = run_cli(*args, "--out", out)
    assert_one_line(code, stdout, err, "no space left on the device")
    assert left_behind(small_disk.path) == []
    small_disk.resize("20m")
    code, stdout, err = run_cli(*args, "--out", out)
    assert code == 0, stdout[-3000:] + err
    outs = [str(tmp_path / "reference"), str(out)]
    assert differences(snapshot(tmp_path / "reference", outs), snapshot(out, outs)) == []


def test_training_on_a_full_disk_keeps_no_partial_checkpoint(
    small_disk: Disk, run_cli: RunCli, tmp_path: Path
) -> None:
    """A checkpoint folder is whole or absent; torch's resume.pt too (serialised in
    memory, written atomically)."""
    args = ["train", "--preset", "micro", "--steps", "12"]
    assert run_cli(*args, "--out", tmp_path / "reference")[0] == 0
    out = small_disk.path / "t"
    for size in ("8k", "300k", "600k"):
        small_disk.resize(size)
        resume = ["--resume"] if (out / "resume.pt").is_file() else ["--overwrite"]
        code, stdout, err = run_cli(*args, "--out", out, *resume)
        if code == 0:
            break
        assert_one_line(code, stdout, err, "no space left on the device")
        assert left_behind(small_disk.path) == []
        for step in (out / "checkpoints").glob("step_*"):  # every checkpoint loads
            assert (step / "model.safetensors").is_file() and (step / "config.json").is_file()
    small_disk.resize("50m")
    resume = ["--resume"] if (out / "resume.pt").is_file() else ["--overwrite"]
    if (
        not (out / "dynamics.json").is_file()
        or '"complete": true' not in (out / "dynamics.json").read_text()
    ):
        assert run_cli(*args, "--out", out, *resume)[0] == 0
    outs = [str(tmp_path / "reference"), str(out)]
    assert differences(snapshot(tmp_path / "reference", outs), snapshot(out, outs)) == []
