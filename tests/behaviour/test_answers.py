"""Answer rules: each on hand-made answers where the verdict is known either way."""

from __future__ import annotations

import re

import pytest

from lostmid.behaviour.decoding.answers import (
    answer_correct,
    cut_at_eos,
    found,
    resolve_rule,
    squad_normalise,
)
from lostmid.errors import UserError

UUID = "3f2a9c1e-7b4d-4e8a-9c2f-1a2b3c4d5e6f"


@pytest.mark.parametrize(
    ("rule", "answer", "reference", "expected"),
    [
        # Liu's kv rule: the value, lower-cased, anywhere in the answer
        ("substring", f' "{UUID.upper()}",\n "next": ...', UUID, True),
        ("substring", f" {UUID[:-1]}", UUID, False),
        ("substring", "ab  12", "AB 12", True),  # whitespace collapsed on both sides
        # exact: the first line, SQuAD-normalised, equals the reference
        ("exact", " The Eiffel Tower.\nIt is in Paris", "eiffel tower", True),
        ("exact", " the Eiffel Tower in Paris", "eiffel tower", False),
        ("exact", f' "{UUID}"', UUID, True),  # quotes and hyphens are punctuation
        # best-subspan (Liu's QA): normalised reference inside the normalised first line
        ("best-subspan", " It is the Eiffel Tower, in Paris.", "Eiffel tower", True),
        ("best-subspan", " I think\nEiffel Tower", "Eiffel tower", False),
        ("best-subspan", " Paris", "Paris, France", False),
    ],
)
def test_rules_on_known_answers(rule: str, answer: str, reference: str, expected: bool) -> None:
    assert found(rule, answer, reference) is expected


def test_any_or_all_references_and_the_auto_rule() -> None:
    assert answer_correct("substring", "1234567 and 7654321", ("7654321", "1234567"), "all")
    assert not answer_correct("substring", "1234567 only", ("7654321", "1234567"), "all")
    assert answer_correct("best-subspan", " Lyon", ("Paris", "Lyon"), "any")
    assert resolve_rule("auto", "qa") == "best-subspan"
    assert {resolve_rule("auto", t) for t in ("kv", "niah", "ruler", "longbench")} == {"substring"}
    assert squad_normalise("An apple, the pear") == "apple pear"


def test_answers_stop_at_the_first_end_of_sequence() -> None:
    assert cut_at_eos([4, 5, 1, 6, 1], 1) == [4, 5] and cut_at_eos([4, 5], 1) == [4, 5]
    assert cut_at_eos([1, 4], None) == [1, 4]


def test_unknown_rule_is_one_line() -> None:
    with pytest.raises(UserError, match=re.escape("--scoring 'fuzzy' unknown")):
        resolve_rule("fuzzy", "kv")
