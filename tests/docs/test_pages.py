"""The documentation's generated parts (docs/hooks.py) and the rules of what a user reads:
every option of every command is on its page, the claims table is the saved run's, the
README stays short, and no issue number reaches a reader."""

from __future__ import annotations

import doctest
import importlib.util
import re
import sys
from pathlib import Path
from types import ModuleType
from typing import Annotated

import pytest
import typer
from typer.main import get_command

from lostmid.compare.claims import Claim
from lostmid.runinfo import write_json

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
ISSUE_NUMBER = re.compile(r"\bissues?\s*#?\s*\d+", re.IGNORECASE)


def load_hooks() -> ModuleType:
    """docs/hooks.py as a module (it is the site's, not the package's)."""
    spec = importlib.util.spec_from_file_location("lostmid_docs_hooks", DOCS / "hooks.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


hooks = load_hooks()


def page_of(name: str, command: object) -> str:
    """The page the site shows for a command: its prose with the generated table."""
    prose = DOCS / "commands" / f"{name}.md"
    return hooks.command_page(name, command, prose.read_text() if prose.is_file() else None)


def test_every_option_of_every_command_is_on_its_generated_page() -> None:
    found = hooks.commands()
    assert {"theory", "measure", "retrieve", "reproduce", "remedies"} <= set(found)
    missing = {}
    for name, command in found.items():
        page = page_of(name, command)
        params = hooks.visible(command)
        assert params, f"lostmid {name} shows no option"
        absent = [f for p in params for f in hooks.flags(p) if f"`{f}`" not in page]
        if absent:
            missing[name] = absent
        # one table row per option, in a table with a header
        rows = [line for line in page.splitlines() if line.startswith("| `")]
        assert len(rows) >= len(params), name
    assert missing == {}


def test_every_command_has_a_hand_written_page_with_its_options_marker() -> None:
    """A new command needs its story told: a page under docs/commands/ holding the
    marker where the generated options table goes."""
    for name in hooks.commands():
        prose = DOCS / "commands" / f"{name}.md"
        assert prose.is_file(), f"docs/commands/{name}.md is missing"
        text = prose.read_text()
        assert text.startswith(f"# lostmid {name}\n"), name
        assert text.count(hooks.OPTIONS_MARKER) == 1, name


def test_the_options_table_of_a_known_command() -> None:
    """A command built here: each flag with its alias and negation, its default and its
    help in one row; a hidden option and --help are left out; pipes are escaped."""
    app = typer.Typer()

    @app.command()
    def run(
        model: Annotated[str, typer.Argument(help="The model.")],
        length: Annotated[int, typer.Option("--length", "-L", help="Tokens | positions.")] = 512,
        out: Annotated[Path, typer.Option(help="Where results go.")] = Path("results/x"),
        quick: Annotated[bool, typer.Option("--quick", help="Small and fast.")] = False,
        secret: Annotated[int, typer.Option(hidden=True, help="Not shown.")] = 1,
    ) -> None:
        """Run it."""

    command = get_command(app)
    table = hooks.options_table(command)
    rows = table.splitlines()
    assert rows[0] == "| option | default | what it does |"
    assert rows[2] == "| `MODEL` | required | The model. |"
    assert rows[3] == "| `--length`, `-L` | `512` | Tokens \\| positions. |"
    assert rows[4] == "| `--out` | `results/x` | Where results go. |"
    assert rows[5] == "| `--quick` | off | Small and fast. |"
    assert len(rows) == 6 and "secret" not in table and "--help" not in table
    page = hooks.command_page("run", command, "# lostmid run\n\nStory.\n")
    assert page.startswith("# lostmid run\n\nStory.\n") and "`--length`, `-L`" in page
    marked = hooks.command_page("run", command, "# lostmid run\n\n<!-- options -->\n\nAfter.\n")
    assert marked.index("`--quick`") < marked.index("After.")
    assert "lostmid run [OPTIONS] MODEL" in marked


def test_the_navigation_lists_every_command_in_the_cli_order() -> None:
    config = {"nav": [{"Home": "index.md"}, {"Commands": "commands/index.md"}]}
    hooks.on_config(config)
    entries = config["nav"][1]["Commands"]
    assert entries[0] == {"All commands": "commands/index.md"}
    listed = [next(iter(e.values())) for e in entries[1:]]
    names = list(hooks.commands())
    assert listed[: len(names)] == [f"commands/{n}.md" for n in names]


def claim(verdict: str, text: str = "the valley deepens") -> Claim:
    return Claim(
        claim=text, paper="10^2 -> 10^3", ours="+0.3 [+0.1, +0.5]", verdict=verdict, rule="r"
    )


def test_the_claims_table_is_read_from_the_file_reproduce_writes(tmp_path: Path) -> None:
    path = tmp_path / "claims.json"
    write_json(path, [claim("reproduced"), claim("inconclusive", "a | b"), claim("reproduced")])
    section = hooks.claims_section(path)
    assert section.startswith("3 claims: 2 reproduced, 1 inconclusive")
    rows = [line for line in section.splitlines() if line.startswith("| ") and "---" not in line]
    assert rows[0] == "| claim | paper | ours | verdict |"
    first = "| the valley deepens | 10^2 -> 10^3 | +0.3 [+0.1, +0.5] | **reproduced**"
    assert rows[1] == first + "<br><small>r</small> |"
    assert rows[2].startswith("| a \\| b |") and len(rows) == 4


def test_a_missing_claims_file_is_a_note_and_a_damaged_one_an_error(tmp_path: Path) -> None:
    note = hooks.claims_section(tmp_path / "claims.json")
    assert note.startswith("!!! note") and "make reproduce" in note and "|" not in note
    (tmp_path / "claims.json").write_text('[{"claim": "x", "paper": "y"}]')
    with pytest.raises(ValueError, match="lacks one of"):
        hooks.claims_section(tmp_path / "claims.json")


def test_the_archived_studies_are_listed_from_their_study_json() -> None:
    table = hooks.studies_section()
    folders = sorted(p.parent.name for p in (ROOT / "studies").glob("*/study.json"))
    assert folders, "no archived study"
    for folder in folders:
        assert f"`studies/{folder}`" in table
    assert "`studies/checkpoints-L512` | smollm2-135m, gemma3-270m | 512 |" in table


def test_doctests_are_fenced_as_code() -> None:
    assert doctest.testmod(hooks).failed == 0
    text = "What.\n\n```python\n>>> kept\n```\n\n    >>> x = 1\n    >>> x\n    1\n\nAfter.\n"
    fenced = hooks.fence_doctests(text)
    assert fenced.count("```pycon") == 1 and "    ```pycon\n    >>> x = 1" in fenced
    assert fenced.endswith("    1\n    ```\n\nAfter.\n")


def test_the_readme_is_a_five_minute_read() -> None:
    lines = README.read_text().splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines; move detail to docs/"
    text = README.read_text()
    assert text.count("<!-- claims:start -->") == 1 and text.count("<!-- claims:end -->") == 1
    block = text.split("<!-- claims:start -->")[1].split("<!-- claims:end -->")[0]
    assert block.strip().startswith("| claim | paper | verdicts (rows) |")


def test_the_readme_claims_are_the_saved_runs_not_typed() -> None:
    """The README's table is made from the saved main-job run (python docs/hooks.py), so
    a verdict in the README is one a reader can find in studies/reproduce-default."""
    saved = hooks.read_claims(hooks.CLAIMS)
    assert saved is not None, f"{hooks.CLAIMS} is the saved run the README reads"
    text = README.read_text()
    assert hooks.readme_with_claims(text, saved) == text, "run python docs/hooks.py"
    changed = [dict(saved[0], verdict="reproduced" if saved[0]["verdict"] != "reproduced"
                    else "inconclusive"), *saved[1:]]  # fmt: skip
    assert hooks.readme_with_claims(text, changed) != text  # the check can fail


def test_no_issue_numbers_in_what_a_user_reads() -> None:
    found = []
    for path in [README, *sorted(DOCS.rglob("*.md"))]:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if ISSUE_NUMBER.search(line):
                found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    group = hooks.cli_group()
    texts = {"lostmid": group.help or "", **{f"--{p.name}": p.help or "" for p in group.params}}
    for name, command in hooks.commands(group).items():
        texts[f"lostmid {name}"] = command.help or ""
        for param in command.params:
            texts[f"lostmid {name} {param.name}"] = getattr(param, "help", None) or ""
    found += [f"{where}: {text}" for where, text in texts.items() if ISSUE_NUMBER.search(text)]
    assert found == []


def test_the_issue_number_rule_catches_what_it_should() -> None:
    for text in ("see issue 27", "(Issue 28)", "issues 16-20", "issue #3"):
        assert ISSUE_NUMBER.search(text), text
    for text in ("a tissue 3 cm", "no issue here", "the issue asked"):
        assert not ISSUE_NUMBER.search(text), text


def test_every_result_kind_has_its_section_with_every_top_level_key() -> None:
    """result-files.md: a section per kind, linking its published schema, with a row for
    each top-level key the schema declares (required ones marked always)."""
    from lostmid.files import RESULT_KINDS
    from lostmid.schemas import json_schema, schema_file_name

    page = hooks.result_files_section()
    sections = page.split("\n## ")
    assert len(sections) == len(RESULT_KINDS)
    for kind, section in zip(RESULT_KINDS, sections, strict=True):
        schema = json_schema(kind)
        assert section.lstrip("# ").startswith(kind)
        assert f"(schemas/{schema_file_name(kind)})" in section
        for key in schema["properties"]:
            row = next(line for line in section.splitlines() if line.startswith(f"| `{key}` |"))
            assert row.split(" | ")[2] == ("yes" if key in schema["required"] else "no")
            assert row.split(" | ")[3].strip(" |"), f"{kind}: {key} says nothing of itself"
