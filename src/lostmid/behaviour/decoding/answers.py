"""Scoring rules for a generated answer (``retrieve --scoring``), recorded with every run.

* ``substring`` (Liu et al.'s key-value rule, RULER's ``string_match_all`` for one
  output): a reference is found when ``normalise(reference)`` is a substring of
  ``normalise(answer)``, ``normalise(s) = " ".join(s.lower().split())``;
* ``exact``: the answer's first line equals the reference after SQuAD normalisation
  (:func:`squad_normalise`: lower case, punctuation and the articles a/an/the removed,
  whitespace collapsed);
* ``best-subspan`` (Liu et al.'s QA rule, ``best_subspan_em`` on the first line of the
  answer, as their ``evaluate_qa_responses`` takes it): the SQuAD-normalised reference is
  a substring of the SQuAD-normalised first line.

An example is correct when ``any`` of its references is found (QA alternatives) or
``all`` are (RULER's outputs); ``auto`` is ``best-subspan`` for QA data and
``substring`` otherwise. Generated ids are cut at the first end-of-sequence token, as
``generate`` (and lm-evaluation-harness) stop there.

>>> answer_correct("substring", ' "A1B2-c3"\\nmore', ("a1b2-c3",))
True
>>> answer_correct("exact", " The Eiffel Tower.\\nParis", ("eiffel tower",))
True
>>> answer_correct("best-subspan", "\\nParis", ("Paris",))
False
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence

from lostmid.checks import check_choice

RULES = ("substring", "exact", "best-subspan")
RULE_CHOICES = ("auto", *RULES)
_ARTICLES = re.compile(r"\b(a|an|the)\b")
_PUNCTUATION = set(string.punctuation)


def resolve_rule(rule: str, task: str) -> str:
    """``auto`` -> ``best-subspan`` for QA data, else ``substring``; others unchanged.

    >>> resolve_rule("auto", "qa"), resolve_rule("auto", "kv"), resolve_rule("exact", "qa")
    ('best-subspan', 'substring', 'exact')
    """
    check_choice("--scoring", rule, RULE_CHOICES)
    if rule != "auto":
        return rule
    return "best-subspan" if task == "qa" else "substring"


def normalise(text: str) -> str:
    """Lower case, whitespace collapsed and stripped (the ``substring`` rule).

    >>> normalise("  The VALUE\\n is ")
    'the value is'
    """
    return " ".join(text.lower().split())


def squad_normalise(text: str) -> str:
    """SQuAD's answer normalisation: lower case, punctuation removed, the articles a, an,
    the removed, whitespace collapsed.

    >>> squad_normalise("The  Eiffel-Tower, (Paris)!")
    'eiffeltower paris'
    """
    text = "".join(ch for ch in text.lower() if ch not in _PUNCTUATION)
    return " ".join(_ARTICLES.sub(" ", text).split())


def _first_line(answer: str) -> str:
    return answer.split("\n")[0].strip()


def found(rule: str, answer: str, reference: str) -> bool:
    """Whether ``reference`` is found in ``answer`` under ``rule`` (module doc)."""
    check_choice("--scoring", rule, RULES)
    if rule == "substring":
        return normalise(reference) in normalise(answer)
    line = squad_normalise(_first_line(answer))
    if rule == "exact":
        return line == squad_normalise(reference)
    return squad_normalise(reference) in line


def answer_correct(rule: str, answer: str, references: Sequence[str], match: str = "any") -> bool:
    """Whether ``answer`` is correct: any (``match="any"``) or all (``"all"``) references
    found under ``rule``.

    >>> answer_correct("substring", "12 and 34", ("12", "34"), "all")
    True
    >>> answer_correct("substring", "12 and 3", ("12", "34"), "all")
    False
    """
    check_choice("match", match, ("any", "all"))
    hits = [found(rule, answer, r) for r in references]
    return all(hits) if match == "all" else any(hits)


def cut_at_eos(ids: Sequence[int], eos_id: int | None) -> list[int]:
    """``ids`` up to (not including) the first ``eos_id``; all of them when None.

    >>> cut_at_eos([5, 6, 2, 7], 2), cut_at_eos([5, 6], None)
    ([5, 6], [5, 6])
    """
    ids = list(ids)
    if eos_id is not None and eos_id in ids:
        return ids[: ids.index(eos_id)]
    return ids
