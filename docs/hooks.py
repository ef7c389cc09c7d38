"""MkDocs hooks: the parts of the documentation that are generated, so they cannot drift.

- One page per CLI command under ``commands/``: the hand-written prose of
  ``docs/commands/NAME.md`` with its options table generated from the click command that
  ``lostmid NAME`` runs (flags, defaults and help as ``lostmid NAME --help`` prints
  them). The table goes where the page has the marker ``<!-- options -->`` (at the end if
  it has none); a command with no prose page gets a page of its help and table. The
  ``Commands`` section of the navigation lists the commands in the CLI's order.
- ``commands/index.md``: the marker ``<!-- commands -->`` becomes the list of commands
  with their summaries, ``<!-- global-options -->`` the options of ``lostmid`` itself.
- ``result-files.md``: ``<!-- result-files -->`` becomes one section per kind of result
  file (its name, schema tag, what writes it and a table of its top-level fields), read
  from the JSON Schemas of :mod:`lostmid.schemas`; the schemas themselves are published
  beside it as ``schemas/KIND.schema.json``.
- ``results.md``: ``<!-- claims -->`` becomes the claims table of the saved main-job run
  (``studies/reproduce-default/claims.json``), ``<!-- studies -->`` the facts of each
  archived study under ``studies/``.

The functions that make the Markdown are plain functions of their inputs
(``tests/docs/test_pages.py`` calls them).
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
CLAIMS = ROOT / "studies" / "reproduce-default" / "claims.json"
STUDIES = ROOT / "studies"
OPTIONS_MARKER = "<!-- options -->"
COMMANDS_MARKER = "<!-- commands -->"
GLOBAL_MARKER = "<!-- global-options -->"
CLAIMS_MARKER = "<!-- claims -->"
STUDIES_MARKER = "<!-- studies -->"
RESULT_FILES_MARKER = "<!-- result-files -->"

log = logging.getLogger("mkdocs.plugins.lostmid")


# --- the CLI -----------------------------------------------------------------------------


# typer builds click commands (its own copy of click in newer releases), so they are
# read by their attributes: ``commands``, ``params``, ``opts``, ``help``, ``default``.
Command = Any
Param = Any


def cli_group() -> Command:
    """The ``lostmid`` command as click sees it (typer builds it from the app)."""
    import typer

    from lostmid.cli import app

    return typer.main.get_command(app)


def commands(group: Command | None = None) -> dict[str, Command]:
    """Every subcommand of ``lostmid``, in the order ``lostmid --help`` lists them."""
    group = group or cli_group()
    return dict(group.commands)


def is_argument(param: Param) -> bool:
    """A positional argument (``MODEL``), not an option."""
    return param.param_type_name == "argument"


def _cell(text: str) -> str:
    """Text made safe for one cell of a Markdown table (one line, pipes escaped)."""
    return " ".join(str(text).split()).replace("|", "\\|")


def _default(param: Param) -> str:
    """An option's default as a reader wants it: a flag is off, None is "-" (the help
    says whose value is kept), a path or a value in code."""
    if getattr(param, "is_flag", False) and not getattr(param, "secondary_opts", []):
        return "off" if not param.default else "on"
    default = param.default
    if default is None or callable(default):
        return "-"
    if isinstance(default, list | tuple):
        default = ",".join(str(v) for v in default)
    return f"`{_cell(str(default))}`" if str(default) != "" else '`""`'


def flags(param: Param) -> list[str]:
    """The flags a user can type for a parameter (``--length``, ``-L``, ``--no-x``), or
    its metavar for an argument."""
    if is_argument(param):
        return [(param.metavar or param.name).upper()]
    return [*param.opts, *getattr(param, "secondary_opts", [])]


def visible(command: Command) -> list[Param]:
    """The parameters ``--help`` shows (hidden options and ``--help`` itself left out)."""
    return [
        p
        for p in command.params
        if not getattr(p, "hidden", False) and p.name != "help" and p.expose_value
    ]


def options_table(command: Command) -> str:
    """The Markdown table of a command's arguments and options: flags, default, help;
    a bold row starts each of the help's groups."""
    rows = ["| option | default | what it does |", "| --- | --- | --- |"]
    panel = None
    for param in visible(command):
        box = getattr(param, "rich_help_panel", None)
        if box and box != panel:  # the help's groups (--help shows them as boxes)
            rows.append(f"| **{_cell(box)}** | | |")
            panel = box
        names = ", ".join(f"`{name}`" for name in flags(param))
        required = is_argument(param) or param.required
        default = "required" if required else _default(param)
        help_text = getattr(param, "help", None) or ""
        rows.append(f"| {names} | {default} | {_cell(help_text)} |")
    return "\n".join(rows)


def usage(name: str, command: Command) -> str:
    """``lostmid NAME [OPTIONS] ARGS`` as click writes it."""
    arguments = [
        flags(p)[0] + ("" if p.required else "?") for p in visible(command) if is_argument(p)
    ]
    return " ".join([f"lostmid {name} [OPTIONS]", *arguments])


def command_page(name: str, command: Command, prose: str | None) -> str:
    """The page of one command: its prose with the generated options table at the
    marker (appended when the prose has none); without prose, its help and the table."""
    if prose is None:
        prose = f"# lostmid {name}\n\n{(command.help or '').strip()}\n\n{OPTIONS_MARKER}\n"
    table = (
        "## Options\n\n"
        "Generated from the command itself (`lostmid "
        f"{name} --help` says the same).\n\n```\n{usage(name, command)}\n```\n\n"
        f"{options_table(command)}\n"
    )
    if OPTIONS_MARKER in prose:
        return prose.replace(OPTIONS_MARKER, table, 1)
    return f"{prose.rstrip()}\n\n{table}"


def commands_list(group: Command) -> str:
    """The commands of ``lostmid`` with their one-line summaries, each a link."""
    lines = ["| command | what it does |", "| --- | --- |"]
    for name, command in commands(group).items():
        summary = (command.help or "").strip().splitlines()[0] if command.help else ""
        lines.append(f"| [`lostmid {name}`]({name}.md) | {_cell(summary)} |")
    return "\n".join(lines)


# --- results -----------------------------------------------------------------------------

CLAIM_COLUMNS = ("claim", "paper", "ours", "verdict")


def read_claims(path: Path) -> list[dict[str, str]] | None:
    """The claims of a saved run (``claims.json``: a list of records with ``claim``,
    ``paper``, ``ours``, ``verdict`` and ``rule``), or None when the file is absent."""
    if not path.is_file():
        return None
    claims = json.loads(path.read_text())
    if not isinstance(claims, list) or not all(isinstance(c, Mapping) for c in claims):
        raise ValueError(f"{path}: expected a list of claim records")
    missing = [c for c in claims if not set(CLAIM_COLUMNS) <= set(c)]
    if missing:
        raise ValueError(f"{path}: a claim lacks one of {CLAIM_COLUMNS}: {missing[0]}")
    return [dict(c) for c in claims]


def claims_table(claims: Sequence[Mapping[str, str]], rules: bool = True) -> str:
    """The claims as a Markdown table: the paper's statement and number, ours, and the
    verdict in bold, with (``rules``) the rule that turned one into the other under it
    in small type.

    >>> row = {"claim": "U", "paper": "yes", "ours": "a | b", "verdict": "partly"}
    >>> print(claims_table([row], rules=False))
    | claim | paper | ours | verdict |
    | --- | --- | --- | --- |
    | U | yes | a \\| b | **partly** |
    """
    lines = ["| claim | paper | ours | verdict |", "| --- | --- | --- | --- |"]
    for claim in claims:
        verdict = f"**{_cell(claim['verdict'])}**"
        if rules and claim.get("rule"):
            verdict += f"<br><small>{_cell(claim['rule'])}</small>"
        cells = [_cell(claim["claim"]), _cell(claim["paper"]), _cell(claim["ours"]), verdict]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def verdict_counts(claims: Iterable[Mapping[str, str]]) -> str:
    """``12 claims: 5 reproduced, 3 not reproduced, ...`` (verdicts in order of first
    appearance)."""
    counts: dict[str, int] = {}
    for claim in claims:
        counts[claim["verdict"]] = counts.get(claim["verdict"], 0) + 1
    parts = ", ".join(f"{n} {verdict}" for verdict, n in counts.items())
    return f"{sum(counts.values())} claims: {parts}"


README_START, README_END = "<!-- claims:start -->", "<!-- claims:end -->"


def readme_claims(claims: Sequence[Mapping[str, str]]) -> str:
    """The README's short table of a saved run: one row per claim of the paper (the
    rows of one claim, e.g. one per model, counted together), its number and our
    verdicts.

    >>> rows = [{"claim": "U", "paper": "yes", "verdict": v} for v in ("a", "b", "a")]
    >>> print(readme_claims(rows))
    | claim | paper | verdicts (rows) |
    | --- | --- | --- |
    | U | yes | a (2), b (1) |
    """
    grouped: dict[str, list[Mapping[str, str]]] = {}
    for claim in claims:
        grouped.setdefault(claim["claim"], []).append(claim)
    lines = ["| claim | paper | verdicts (rows) |", "| --- | --- | --- |"]
    for name, rows in grouped.items():
        counts: dict[str, int] = {}
        for row in rows:
            counts[row["verdict"]] = counts.get(row["verdict"], 0) + 1
        verdicts = ", ".join(f"{v} ({n})" for v, n in counts.items())
        lines.append(f"| {_cell(name)} | {_cell(rows[0]['paper'])} | {verdicts} |")
    return "\n".join(lines)


def readme_with_claims(readme: str, claims: Sequence[Mapping[str, str]]) -> str:
    """``readme`` with the block between its claims markers made from ``claims``."""
    head, rest = readme.split(README_START, 1)
    _, tail = rest.split(README_END, 1)
    return f"{head}{README_START}\n{readme_claims(claims)}\n{README_END}{tail}"


def claims_section(path: Path = CLAIMS) -> str:
    """The Results page's claims: the table of the saved run, or a note saying where
    the file is expected and how to make it."""
    claims = read_claims(path)
    where = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    if claims is None:
        return (
            '!!! note "No saved main-job run yet"\n\n'
            f"    This table is rendered from `{where}`, which is not in this checkout. "
            "`make reproduce` writes `results/reproduce/claims.json`; copy that file to "
            f"`{where}` and rebuild the site (`make docs`)."
        )
    return f"{verdict_counts(claims)}, read from `{where}`.\n\n{claims_table(claims)}"


def studies_section(root: Path = STUDIES) -> str:
    """A table of the archived studies under ``studies/`` (each a folder with a
    ``study.json``): the design each was made with, read from that file."""
    rows = [
        "| folder | checkpoints | L | input kinds | inputs | twins | controls | profiles |",
        "| --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    found = sorted(p.parent for p in root.glob("*/study.json"))
    for folder in found:
        facts: dict[str, Any] = json.loads((folder / "study.json").read_text())
        profiles = len(list(folder.rglob("*.npz")))

        def joined(key: str, facts: dict[str, Any] = facts) -> str:
            return ", ".join(str(v) for v in facts.get(key, [])) or "-"

        rows.append(
            f"| `studies/{folder.name}` | {joined('checkpoints')} | {joined('lengths')} | "
            f"{joined('kinds')} | {facts.get('inputs', '-')} | {facts.get('twins', '-')} | "
            f"{joined('controls')} | {profiles} files |"
        )
    if not found:
        return "No archived study in this checkout."
    return "\n".join(rows)


# --- result files -------------------------------------------------------------------------


def schema_type(prop: Mapping[str, Any]) -> str:
    """A JSON Schema property's type in words: ``number | null``, ``array of integer``,
    ``Metadata`` (a shared record, by its name), ``object``.

    >>> schema_type({"anyOf": [{"type": "number"}, {"type": "null"}]})
    'number | null'
    >>> schema_type({"type": "array", "items": {"$ref": "#/$defs/Claim"}})
    'array of Claim'
    >>> schema_type({"anyOf": [{"type": "array", "items": {"anyOf": [{"type": "number"},
    ...     {"type": "null"}]}}, {"type": "null"}]})
    'array of (number | null) | null'
    """
    if "$ref" in prop:
        return str(prop["$ref"]).rpartition("/")[2]
    if "const" in prop:
        return f"`{json.dumps(prop['const'])}`"
    if "enum" in prop:
        return " | ".join(f"`{json.dumps(v)}`" for v in prop["enum"])
    if "anyOf" in prop:
        return " | ".join(schema_type(p) for p in prop["anyOf"])
    kind = prop.get("type", "any")
    if kind == "array":
        items = schema_type(prop.get("items", {}))
        return f"array of ({items})" if " | " in items else f"array of {items}"
    return str(kind)


def fields_table(schema: Mapping[str, Any]) -> str:
    """A Markdown table of a JSON Schema's top-level properties: name, type, whether the
    file always has it, and the description."""
    required = set(schema.get("required", ()))
    rows = ["| key | type | always | what it holds |", "| --- | --- | --- | --- |"]
    for name, prop in schema.get("properties", {}).items():
        described = prop.get("description", "")
        if not described and "$ref" in prop:
            ref = str(prop["$ref"]).rpartition("/")[2]
            described = schema.get("$defs", {}).get(ref, {}).get("description", "")
        text = _cell(re.sub(r":\w+:`~?([^`]+)`", r"`\1`", " ".join(described.split())))
        cell = schema_type(prop).replace("|", "\\|")
        rows.append(f"| `{name}` | {cell} | {'yes' if name in required else 'no'} | {text} |")
    return "\n".join(rows)


def result_files_section() -> str:
    """One section per kind of result file: what it is, its tag, who writes it, its
    published JSON Schema and its top-level fields."""
    from lostmid.files import RESULT_KINDS
    from lostmid.schemas import json_schema, schema_file_name

    parts = []
    for name, kind in RESULT_KINDS.items():
        schema = json_schema(name)
        file = schema_file_name(name)
        parts.append(
            f"## {name}\n\n{' '.join(schema.get('description', '').split())}\n\n"
            f"Tag `{kind.schema}`; {kind.produced_by}. "
            f"JSON Schema: [{file}](schemas/{file}).\n\n{fields_table(schema)}\n"
        )
    return "\n".join(parts)


# --- MkDocs events -----------------------------------------------------------------------


def _prose(name: str) -> str | None:
    path = DOCS / "commands" / f"{name}.md"
    return path.read_text() if path.is_file() else None


def on_config(config: Any) -> Any:
    """The ``Commands`` entry of the navigation becomes the index and one page per
    command, in the CLI's order; a prose page whose command this build lacks is listed
    after them."""
    names = list(commands())
    extra = sorted(
        p.stem for p in (DOCS / "commands").glob("*.md") if p.stem not in {*names, "index"}
    )
    pages = [{f"lostmid {name}": f"commands/{name}.md"} for name in [*names, *extra]]
    for entry in config["nav"] or []:
        if isinstance(entry, dict) and "Commands" in entry:
            entry["Commands"] = [{"All commands": "commands/index.md"}, *pages]
    return config


def on_files(files: Any, config: Any) -> Any:
    """A page for each command without a hand-written one; each result kind's JSON
    Schema."""
    from mkdocs.structure.files import File

    for name, command in commands().items():
        uri = f"commands/{name}.md"
        if files.get_file_from_path(uri) is None:
            stub = f"# lostmid {name}\n\n{(command.help or '').strip()}\n\n{OPTIONS_MARKER}\n"
            files.append(File.generated(config, uri, content=stub))
    from lostmid.files import RESULT_KINDS
    from lostmid.schemas import json_schema, schema_file_name

    for kind in RESULT_KINDS:  # the published JSON Schemas, beside result-files.md
        content = json.dumps(json_schema(kind), indent=1) + "\n"
        files.append(File.generated(config, f"schemas/{schema_file_name(kind)}", content=content))
    script = mathjax_script()
    files.append(File.generated(config, f"javascripts/{script.name}", abs_src_path=str(script)))
    return files


def mathjax_script() -> Path:
    """MathJax's single-file SVG build (every TeX extension, fonts as paths: one file,
    nothing else loaded) from the installed ``django-static-mathjax`` package (the docs
    build's dependency, pyproject's ``dev`` extra): the maths renders with no CDN."""
    from importlib import resources

    found = Path(str(resources.files("mathjax"))) / "static/mathjax/es5/tex-svg-full.js"
    if not found.is_file():
        raise FileNotFoundError(f"{found}: install the dev extra (django-static-mathjax)")
    return found


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Fill the markers of the pages that hold generated parts."""
    uri = page.file.src_uri
    if uri == "commands/index.md":
        group = cli_group()
        markdown = markdown.replace(COMMANDS_MARKER, commands_list(group))
        return markdown.replace(GLOBAL_MARKER, options_table(group))
    if uri.startswith("commands/"):
        name = Path(uri).stem
        found = commands()
        if name in found:
            return command_page(name, found[name], markdown)
        return (
            '!!! note "Not in this build"\n\n'
            f"    `lostmid {name}` is not a command of the lostmid this site was built "
            "with; its options table appears once it is.\n\n" + markdown
        )
    if uri == "result-files.md":
        return markdown.replace(RESULT_FILES_MARKER, result_files_section())
    if uri == "results.md":
        markdown = markdown.replace(CLAIMS_MARKER, claims_section())
        return markdown.replace(STUDIES_MARKER, studies_section())
    return markdown


# --- docstrings ----------------------------------------------------------------------------


def fence_doctests(text: str) -> str:
    r"""Docstring text with each run of doctest lines (a ``>>>`` line, its ``...``
    continuations and its output, up to a blank line) inside a ``pycon`` code fence, so
    Markdown shows the example as code rather than as nested quotes.

    >>> fence_doctests("Sum.\n\n>>> 1 + 1\n2\n").splitlines()
    ['Sum.', '', '```pycon', '>>> 1 + 1', '2', '```']
    """
    out: list[str] = []
    inside = False
    fenced = False  # inside a fence the docstring wrote itself
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            fenced = not fenced
        if not fenced and not inside and stripped.startswith(">>>"):
            indent = line[: len(line) - len(line.lstrip())]
            out.append(f"{indent}```pycon")
            inside = True
        elif inside and not stripped:
            out.append(f"{indent}```")
            inside = False
        out.append(line)
    if inside:
        out.append(f"{indent}```")
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


try:  # the griffe extension that mkdocstrings loads (mkdocs.yml: extensions)
    from griffe import Extension
except ImportError:  # pragma: no cover - only the site build needs it
    Extension = object  # type: ignore[assignment,misc]


SPHINX_ROLE = re.compile(r":(?:mod|func|class|meth|data|attr|obj|exc):`(~?)([^`]+)`")


def plain_roles(text: str) -> str:
    r"""Sphinx cross-reference roles (the package's docstrings use them) as inline code;
    ``~`` keeps the last name only, as Sphinx shows it.

    >>> plain_roles("see :func:`lostmid.stats.shape` and :data:`~lostmid.x.FAITHFUL`")
    'see `lostmid.stats.shape` and `FAITHFUL`'
    """
    return SPHINX_ROLE.sub(lambda m: f"`{m[2].rsplit('.', 1)[-1] if m[1] else m[2]}`", text)


class DoctestFences(Extension):  # type: ignore[misc,valid-type]
    """Docstrings as Markdown reads them: doctest examples fenced as code
    (:func:`fence_doctests`), Sphinx roles as inline code (:func:`plain_roles`)."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain_roles(fence_doctests(obj.docstring.value))


if __name__ == "__main__":  # python docs/hooks.py: the README's table from the saved run
    saved = read_claims(CLAIMS)
    if saved is None:
        raise SystemExit(f"{CLAIMS} is not there: save a main-job run's claims.json first")
    readme = ROOT / "README.md"
    readme.write_text(readme_with_claims(readme.read_text(), saved))
    print(f"README.md: the claims table of {CLAIMS.relative_to(ROOT)}")
