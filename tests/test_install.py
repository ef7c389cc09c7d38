"""lostmid as a package: its licence and citation files, and a wheel installed outside the
checkout that runs a command and writes a result its own published JSON Schema accepts."""

from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[1]


def test_the_licence_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["license"]
    text = (ROOT / "LICENSE").read_text()
    assert declared == "MIT"
    assert text.startswith("MIT License") and "the lostmid authors" in text


def test_the_citation_file_names_lostmid_and_the_paper_it_tests() -> None:
    cff = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    assert cff["cff-version"] == "1.2.0"
    assert cff["title"].startswith("lostmid") and cff["version"] == version
    (paper,) = cff["references"]
    assert paper["title"].startswith("Lost in the Middle at Birth")
    assert paper["authors"][0]["family-names"] == "Chowdhury"
    assert any("2603.10123" in i["value"] for i in paper["identifiers"])


def _copy_sources(dest: Path) -> Path:
    """The files git tracks (and those it would), copied: the wheel is built from a copy,
    so the checkout gets no build/ or egg-info."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    for name in listed:
        source = ROOT / name
        if source.is_file() and not name.startswith(("studies/", "docs/")):
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name)
    return dest


@pytest.mark.slow  # a wheel build, a venv and a torch import: about 16 s on 2 cores
def test_a_wheel_installed_outside_the_checkout_measures_a_preset(tmp_path: Path) -> None:
    """Build the wheel (no network: this Python's setuptools), install it into a fresh
    venv whose dependencies are this environment's site-packages (a ``.pth`` file, so
    the checkout's editable install is not among them), run ``lostmid measure`` on a
    tiny preset from a folder outside the checkout, and check ``measure.json`` against
    the JSON Schema the installed package publishes, with an independent reader."""
    source = _copy_sources(tmp_path / "src")
    wheels = tmp_path / "wheels"
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
    subprocess.run(
        [*pip, "wheel", "--no-deps", "--no-build-isolation", "-w", wheels, source],
        check=True,
        capture_output=True,
    )
    (wheel,) = wheels.glob("lostmid-*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", venv], check=True)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    Path(purelib, "dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    subprocess.run(
        [*pip, "--python", python, "install", "--no-deps", "--no-index", wheel], check=True
    )
    work = tmp_path / "elsewhere"
    work.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    where = subprocess.run(
        [python, "-c", "import lostmid; print(lostmid.__file__)"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(purelib), where  # the wheel's copy, not the checkout's
    measured = subprocess.run(
        [venv / "bin" / "lostmid", "measure", "--model", "tiny-gpt2", "-L", "16"]
        + ["--samples", "1", "--probes", "1", "--gain-directions", "1", "--out", "run"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert measured.returncode == 0, measured.stderr
    check = (
        "import json, sys, jsonschema\n"
        "from lostmid.schemas import json_schema\n"
        "jsonschema.validate(json.load(open(sys.argv[1])), json_schema('measure'))\n"
        "print(json_schema('measure')['title'])\n"
    )
    checked = subprocess.run(
        [python, "-c", check, "run/measure.json"],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
    )
    assert checked.returncode == 0, checked.stderr
    assert checked.stdout.strip()
    result = json.loads((work / "run" / "measure.json").read_text())
    assert result["config"]["length"] == 16 and len(result["influence"]) == 16
