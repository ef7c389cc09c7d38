"""The built documentation site: browsable from file:// (no link to a folder), its maths
rendered by a MathJax that comes from an installed package (no CDN), its tutorial run by
the build; and the README's code boxes fit a GitHub page without cutting a comment."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]


class _Loader(yaml.SafeLoader):
    """mkdocs.yml as data (its ``!!python/name`` tags, if any, as text)."""


_Loader.add_multi_constructor("tag:yaml.org,2002:python/", lambda loader, s, node: s)


def mkdocs_config() -> dict:
    return yaml.load((ROOT / "mkdocs.yml").read_text(), Loader=_Loader)


def test_the_site_links_pages_as_files_and_loads_only_its_own_scripts() -> None:
    config = mkdocs_config()
    assert config["use_directory_urls"] is False  # page.html, not page/ (file://)
    scripts = config["extra_javascript"]
    assert scripts and not any("//" in s for s in scripts)  # nothing from a CDN
    assert any(s.endswith("tex-svg-full.js") for s in scripts)
    extensions = [e if isinstance(e, str) else next(iter(e)) for e in config["markdown_extensions"]]
    assert "pymdownx.arithmatex" in extensions


def test_the_mathjax_the_site_loads_is_an_installed_packages_file() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("site_hooks", ROOT / "docs" / "hooks.py")
    assert spec is not None and spec.loader is not None
    hooks = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hooks)
    script = hooks.mathjax_script()
    assert script.is_file() and script.stat().st_size > 1_000_000
    assert "site-packages" in str(script) or "dist-packages" in str(script)
    assert b"MathJax" in script.read_bytes()[:20000]


def test_the_readme_code_boxes_cut_no_comment() -> None:
    """GitHub shows about 95 characters of a code line before it scrolls."""
    text = (ROOT / "README.md").read_text()
    boxes = re.findall(r"^```(?:bash|sh)\n(.*?)^```", text, flags=re.S | re.M)
    assert len(boxes) >= 3
    long = [line for box in boxes for line in box.splitlines() if len(line) > 88]
    assert long == []


LOCAL_HREF = re.compile(r'href="(?!https?:|mailto:|#|data:)([^"]*)"')


@pytest.mark.slow  # the whole site with its tutorial: about a minute on 2 cores
def test_the_built_site_navigates_from_files_and_runs_its_tutorial(tmp_path: Path) -> None:
    env = os.environ | {"NO_MKDOCS_2_WARNING": "1"}
    site = tmp_path / "site"
    build = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "-d", site]
    done = subprocess.run(build, cwd=ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    index = (site / "index.html").read_text()
    links = LOCAL_HREF.findall(index)
    assert links and [h for h in links if h.endswith("/")] == []
    assert all((site / h.split("#")[0]).exists() for h in links if h.split("#")[0]), links
    assert not re.findall(r'<a [^>]*href="[^"]*/"', index)  # nor an outside folder link
    tutorial = (site / "tutorial.html").read_text()
    assert "shape: undetermined" in tutorial and "<svg" in tutorial  # run by the build
    assert "record 0:" in tutorial and "Traceback" not in tutorial
    concepts = (site / "concepts.html").read_text()
    assert concepts.count('class="arithmatex"') > 20
    assert "javascripts/tex-svg-full.js" in concepts and "cdn" not in concepts.lower()
