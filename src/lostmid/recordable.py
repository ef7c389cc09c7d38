"""A dataclass's JSON record from its fields: the one way lostmid writes a result object
whose record is its fields by name (a nested object by its own ``record()``), so a new
field is written with no second list to keep in step.

>>> from dataclasses import dataclass
>>> @dataclass
... class Inner:
...     x: float
...     def record(self):
...         return fields_record(self)
>>> @dataclass
... class Outer:
...     name: str
...     inner: Inner
...     inners: tuple[Inner, ...]
...     seconds: float
>>> o = Outer("a", Inner(1.0), (Inner(2.0),), 3.14159)
>>> fields_record(o)
{'name': 'a', 'inner': {'x': 1.0}, 'inners': [{'x': 2.0}], 'seconds': 3.14159}
>>> fields_record(o, skip=("name", "inners"), seconds=3.1, extra=True)
{'inner': {'x': 1.0}, 'seconds': 3.1, 'extra': True}
"""

from __future__ import annotations

from dataclasses import fields
from typing import Any


def record_value(value: Any) -> Any:
    """``value`` as a record holds it: an object with a ``record()`` method by that
    record, a list or tuple holding such objects as a list of their records, anything
    else as it is (numbers, strings, arrays and dicts are the JSON writer's)."""
    if callable(getattr(value, "record", None)):
        return value.record()
    if isinstance(value, list | tuple) and any(callable(getattr(v, "record", None)) for v in value):
        return [record_value(v) for v in value]
    return value


def fields_record(obj: Any, *, skip: tuple[str, ...] = (), **values: Any) -> dict[str, Any]:
    """The record of dataclass ``obj``: each field by name in field order (through
    :func:`record_value`), less the fields in ``skip``; ``values`` replace the fields
    of their names in place and add the others at the end."""
    out: dict[str, Any] = {}
    for field in fields(obj):
        if field.name in skip:
            continue
        if field.name in values:
            out[field.name] = values.pop(field.name)
        else:
            out[field.name] = record_value(getattr(obj, field.name))
    out.update(values)
    return out
