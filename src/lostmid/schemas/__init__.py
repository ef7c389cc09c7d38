"""The published layout of every result file lostmid writes, as JSON Schemas.

One pydantic model per result kind (:data:`lostmid.files.RESULT_KINDS`;
:mod:`lostmid.schemas.models`) types the file's top level and the records the kinds
share (run metadata, claims, intervals, shapes, accuracies by position). They serve
three readers:

* users and other tools: :func:`json_schema` gives a kind's JSON Schema (draft 2020-12);
  the documentation site publishes all of them (``schemas/KIND.schema.json``);
* every writer: :func:`lostmid.runinfo.write_json` checks a tagged result against its
  model (:func:`check_written`). A mismatch keeps the file and warns (a run's results
  are never lost to a layout slip); the test suite turns that warning into a failure, so
  each writer is held to its published layout by every test that runs it;
* a reader that wants the check: :func:`validate_result`, one line naming the field.

>>> sorted(json_schema("theory")["required"])[:3]
['continuum', 'continuum_error', 'influence']
>>> validate_result("theory", {"schema": "lostmid.theory/1"}, "t.json")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lostmid.errors.UserError: t.json: not the layout of a theory result: 'influence': ...
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from typing import Any

from lostmid.errors import UserError
from lostmid.files import RESULT_KINDS

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class ResultLayoutWarning(UserWarning):
    """A result file was written that does not match its published layout."""


def _model(kind: str) -> Any:
    from lostmid.schemas.models import MODELS

    if kind not in MODELS:
        raise UserError(f"no result kind {kind!r}; known: {', '.join(MODELS)}")
    return MODELS[kind]


def _problem(error: Any) -> str:
    """A pydantic ValidationError as one line: the first problem, and how many more."""
    problems = error.errors()
    first = problems[0]
    where = ".".join(str(part) for part in first["loc"]) or "the top level"
    more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
    return f"{where!r}: {first['msg']}{more}"


def problems_of(kind: str, document: Mapping[str, Any]) -> str | None:
    """None if ``document`` has the layout of a ``kind`` result, else its first problem
    in one line."""
    from pydantic import ValidationError

    try:
        _model(kind).model_validate(dict(document))
    except ValidationError as error:
        return _problem(error)
    return None


def validate_result(kind: str, document: Mapping[str, Any], where: str) -> None:
    """Refuse, in one line naming ``where`` and the field, a document that does not
    have the layout of a ``kind`` result."""
    problem = problems_of(kind, document)
    if problem is not None:
        raise UserError(f"{where}: not the layout of a {kind} result: {problem}")


def kind_of_tag(document: Any) -> str | None:
    """The result kind whose schema tag ``document`` carries, if any."""
    if not isinstance(document, Mapping):
        return None
    tag = document.get("schema")
    return next((k.name for k in RESULT_KINDS.values() if k.schema == tag), None)


def check_written(where: str, document: Any) -> None:
    """Warn (:class:`ResultLayoutWarning`) when a tagged result ``document`` just written
    to ``where`` does not match its kind's layout; anything untagged passes."""
    kind = kind_of_tag(document)
    if kind is None:
        return
    problem = problems_of(kind, document)
    if problem is not None:
        warnings.warn(
            f"{where}: written, but not in the published layout of a {kind} result "
            f"({problem}); the file is kept",
            ResultLayoutWarning,
            stacklevel=3,
        )


def json_schema(kind: str) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of a ``kind`` result file.

    >>> s = json_schema("reproduce")
    >>> s["$schema"], s["properties"]["claims"]["items"]["$ref"]
    ('https://json-schema.org/draft/2020-12/schema', '#/$defs/Claim')
    """
    model = _model(kind)
    schema = model.model_json_schema(by_alias=True, mode="validation")
    result = RESULT_KINDS[kind]
    return {
        "$schema": SCHEMA_DIALECT,
        "$id": f"lostmid/{result.family.removeprefix('lostmid.')}.schema.json",
        **schema,
        "title": f"lostmid {kind} result ({result.schema})",
    }


def schema_file_name(kind: str) -> str:
    """The published file of ``kind``'s schema: ``theory.schema.json``,
    ``retrieval-training.schema.json``."""
    return kind.replace(" ", "-") + ".schema.json"


__all__ = [
    "ResultLayoutWarning",
    "check_written",
    "json_schema",
    "kind_of_tag",
    "problems_of",
    "schema_file_name",
    "validate_result",
]
