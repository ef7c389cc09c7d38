"""Prompts as a model reads them: the chat template, special tokens, and the split of a
prompt into the context it shares with other questions and its own question.

Chat template (``--chat-template``): ``auto`` applies the tokenizer's template when it
has one (instruct models), ``on`` requires one, ``off`` sends the raw prompt. Applied,
the prompt without its answer prefix is one user turn followed by the generation
prompt, and the answer prefix (RULER's ``The special magic number for ... is``, Liu's
``Corresponding value:``) starts the assistant's turn, as RULER's templates put it:

    text = render_chat(prompt[: -len(answer_prefix)]) + answer_prefix.lstrip()

(its leading whitespace dropped: the generation prompt ends the line). So a chat model
answers with the value at once, and teacher forcing scores the value right after the
prefix, where the model puts it. ``--answer-prefix off`` sends the whole prompt as the
user turn instead (a chat model then writes its own preamble, which a short answer
budget cuts off: Liu's kv at 10 pairs scored 0/50 on SmolLM2-135M-Instruct that way). A
raw prompt (no template: base models) is the prompt, prefix included, either way.

Special tokens, on purpose: the whole text is encoded in one call (never a record or a
needle on its own, so no BOS lands inside the context), with ``add_special_tokens``
True for a raw prompt (the tokenizer's BOS, if it adds one) and False for a templated
one (the template writes its own). Under ``--design shared`` the context is encoded with
those special tokens and each question without any, and the model reads their
concatenation.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from lostmid.behaviour.decoding.tokenizers import Tokenizer
from lostmid.behaviour.tasks.example import RetrievalExample
from lostmid.checks import check_choice
from lostmid.errors import UserError
from lostmid.models.spec import ANSWER_PREFIXES, CHAT_TEMPLATES


@dataclass(frozen=True)
class PromptFormat:
    """How prompts become token ids (module doc).

    Attributes:
        requested: ``auto``, ``on`` or ``off`` as asked.
        applied: whether the chat template is applied.
        add_special_tokens: what the tokenizer is asked for on the whole prompt (and
            on a shared context); questions of a shared context never get any.
        answer_prefix: the answer prefix starts the assistant's turn (``on``) or stays
            in the user's (``off``); only matters when the template is applied.
    """

    requested: str
    applied: bool
    add_special_tokens: bool
    answer_prefix: str = "on"

    @property
    def prefix_in_answer(self) -> bool:
        """Whether the answer prefix is the start of the assistant's turn."""
        return self.applied and self.answer_prefix == "on"

    def _user(self, example: RetrievalExample) -> tuple[str, str]:
        """(user turn, start of the assistant's turn) of a templated prompt."""
        if not self.prefix_in_answer or not example.answer_prefix:
            return example.prompt, ""
        cut = len(example.prompt) - len(example.answer_prefix)
        return example.prompt[:cut], example.answer_prefix.lstrip()

    def text(self, example: RetrievalExample, tokenizer: Tokenizer | None) -> str:
        """The text the tokenizer encodes for ``example``."""
        if not self.applied:
            return example.prompt
        assert tokenizer is not None
        user, answer = self._user(example)
        return tokenizer.render_chat(user) + answer

    def split(self, example: RetrievalExample, tokenizer: Tokenizer | None) -> tuple[str, str]:
        """(context, question): the text of ``example`` cut where its question starts.

        Raises:
            UserError: the example has no question at its end (query-aware, needles,
                QA), or the chat template does not keep the prompt verbatim.
        """
        if example.query_start is None:
            raise UserError(
                f"--design shared needs the question after the records; a {example.task} "
                "example (or --query-aware) has none"
            )
        text = self.text(example, tokenizer)
        at = self._prompt_at(
            text, example, "--design shared ", "; use --chat-template off or --design moved"
        )
        return text[: at + example.query_start], text[at + example.query_start :]

    def _prompt_at(self, text: str, example: RetrievalExample, who: str, fix: str) -> int:
        """Where ``example``'s prompt (its user turn) starts in its rendering ``text``."""
        if not self.applied:
            return 0
        user, _ = self._user(example)
        at = text.find(user)
        if at < 0:
            raise UserError(
                f"{who}cannot find the prompt verbatim in the chat template's rendering{fix}"
            )
        return at

    def context_tokens(self, example: RetrievalExample, tokenizer: Tokenizer) -> tuple[int, int]:
        """``[start, end)`` token indices of ``example``'s context
        (:attr:`~lostmid.behaviour.tasks.example.RetrievalExample.context_span`) in the ids
        :func:`encode` gives it: the token counts of the rendered text up to those
        characters (exact for the byte tokenizer; a BPE merge across an edge can move it
        by one token).

        Raises:
            UserError: the chat template does not keep the prompt verbatim.
        """
        text = self.text(example, tokenizer)
        at = self._prompt_at(text, example, "", "; use --chat-template off")
        first, last = example.context_span
        start, end = at + first, at + last
        special = self.add_special_tokens
        return (
            len(tokenizer.encode(text[:start], special=special)),
            len(tokenizer.encode(text[:end], special=special)),
        )

    def encode_span(
        self, example: RetrievalExample, tokenizer: Tokenizer, first: int, last: int
    ) -> tuple[list[int], tuple[int, int]]:
        """The ids of ``example``'s rendering and the ``[start, end)`` tokens that cover
        its prompt's characters ``[first, last)`` (a needle's ``spans`` entry): from the
        tokenizer's character offsets where it gives them (a fast Hugging Face
        tokenizer: every token that overlaps the characters), else the token counts of
        the text up to each edge (exact for the byte tokenizer).

        Raises:
            UserError: the chat template does not keep the prompt verbatim, or no token
                covers the characters.
        """
        text = self.text(example, tokenizer)
        at = self._prompt_at(text, example, "", "; use --chat-template off")
        start, end = at + first, at + last
        special = self.add_special_tokens
        hf = getattr(tokenizer, "tokenizer", None)
        if hf is not None and getattr(hf, "is_fast", False):
            enc = hf(text, return_offsets_mapping=True, add_special_tokens=special)
            ids = list(enc["input_ids"])
            inside = [
                i
                for i, (a, b) in enumerate(enc["offset_mapping"])
                if b > start and a < end and b > a
            ]
            if not inside:
                raise UserError(f"no token covers characters [{first}, {last}) of the prompt")
            return ids, (inside[0], inside[-1] + 1)
        ids = tokenizer.encode(text, special=special)
        span = (
            len(tokenizer.encode(text[:start], special=special)),
            len(tokenizer.encode(text[:end], special=special)),
        )
        if span[1] <= span[0]:
            raise UserError(f"no token covers characters [{first}, {last}) of the prompt")
        return ids, span

    def record(self, example_text: str, example_ids: list[int]) -> dict[str, Any]:
        return {
            "chat_template": self.requested,
            "applied": self.applied,
            "add_special_tokens": self.add_special_tokens,
            "answer_prefix": self.answer_prefix,
            "prefix_in_answer": self.prefix_in_answer,
            "rendered_example": example_text,
            "example_tokens": len(example_ids),
            "example_first_ids": example_ids[:8],
        }


def prompt_format(
    requested: str, tokenizer: Tokenizer | None, answer_prefix: str = "on"
) -> PromptFormat:
    """The :class:`PromptFormat` for ``--chat-template requested`` with ``tokenizer``.

    >>> from lostmid.behaviour.decoding.tokenizers import ByteTokenizer
    >>> prompt_format("auto", ByteTokenizer())
    PromptFormat(requested='auto', applied=False, add_special_tokens=True, answer_prefix='on')

    Raises:
        UserError: ``on`` with a tokenizer that has no chat template.
    """
    check_choice("--chat-template", requested, CHAT_TEMPLATES)
    has = tokenizer is not None and tokenizer.chat_template is not None
    if requested == "on" and not has:
        name = "the task's own ids" if tokenizer is None else tokenizer.name
        raise UserError(f"--chat-template on: {name} has no chat template; use --chat-template off")
    check_choice("--answer-prefix", answer_prefix, ANSWER_PREFIXES)
    applied = has and requested != "off"
    if applied:  # a template that cannot render is refused now, before any compute
        assert tokenizer is not None
        tokenizer.render_chat("lostmid checks that the template renders")
    return PromptFormat(requested, applied, not applied, answer_prefix)


@dataclass(frozen=True)
class Encoded:
    """Token ids of the examples: ``prompts`` and ``targets`` per example; under
    ``--design shared`` also ``contexts`` (the context's ids, with its special tokens)
    and ``questions`` (the question's ids, none), ``prompts = contexts + questions``."""

    prompts: list[list[int]]
    targets: list[list[int]]
    contexts: list[list[int]] | None = None
    questions: list[list[int]] | None = None
    boundary_matches: bool | None = None


def encode(
    examples: list[RetrievalExample],
    tokenizer: Tokenizer | None,
    fmt: PromptFormat,
    *,
    shared: bool = False,
) -> Encoded:
    """Prompt and target ids per example (module doc); ``shared``: split at each
    question. ``boundary_matches`` records whether encoding the first example whole gives
    the same ids as its context and question encoded apart (BPE merges can cross the
    cut; the shared design reads the split ids in both comparisons)."""
    prompts: list[list[int]] = []
    targets: list[list[int]] = []
    contexts: list[list[int]] = []
    questions: list[list[int]] = []
    whole: list[int] | None = None
    for ex in examples:
        if ex.prompt_ids is not None:  # token-level task (mqar): the ids are the prompt
            ids = list(ex.prompt_ids)
            prompts.append(ids)
            targets.append(list(ex.target_ids or ()))
            if shared:
                assert ex.query_start is not None
                contexts.append(ids[: ex.query_start])
                questions.append(ids[ex.query_start :])
            continue
        if tokenizer is None:
            raise UserError(f"task {ex.task} needs a tokenizer; pass --tokenizer")
        targets.append(tokenizer.encode(ex.target))
        if shared:
            context, question = fmt.split(ex, tokenizer)
            c = tokenizer.encode(context, special=fmt.add_special_tokens)
            q = tokenizer.encode(question, special=False)
            contexts.append(c)
            questions.append(q)
            prompts.append(c + q)
            if whole is None:
                whole = tokenizer.encode(context + question, special=fmt.add_special_tokens)
        else:
            prompts.append(
                tokenizer.encode(fmt.text(ex, tokenizer), special=fmt.add_special_tokens)
            )
    if not shared:
        return Encoded(prompts, targets)
    matches = None if whole is None else whole == prompts[0]
    return Encoded(prompts, targets, contexts, questions, matches)


def shared_lead_in(
    replies: Sequence[str], targets: Sequence[str], values: Sequence[str]
) -> tuple[str, int, int]:
    """The text most replies put between the prompt and the answer beyond what the
    teacher target already starts with: (lead-in, replies that share it, replies that hold
    the answer). Empty when no reply holds it, when the commonest lead-in is not shared
    by more than half of those that do, or when it spans lines.

    >>> shared_lead_in([": 944. The", ": 12 and", " 7"], [" 944", " 12", " 7"], ["944", "12", "7"])
    (':', 2, 3)
    >>> shared_lead_in([" 944", "no"], [" 944", " 12"], ["944", "12"])
    ('', 1, 1)
    """
    found: list[str | None] = []
    for reply, target, value in zip(replies, targets, values, strict=True):
        at = reply.find(value)
        if at < 0:
            continue
        lead_target = target[: max(target.find(value), 0)]
        before = reply[:at]
        found.append(
            before[: len(before) - len(lead_target)] if before.endswith(lead_target) else None
        )
    if not found:
        return "", 0, 0
    best, count = Counter(found).most_common(1)[0]
    if best is None or 2 * count <= len(found) or "\n" in best:
        return "", count, len(found)
    return best, count, len(found)


def with_lead_in(examples: Sequence[RetrievalExample], lead: str) -> list[RetrievalExample]:
    """``examples`` with ``lead`` appended to the prompt and its answer prefix (the
    answer, its spans and the question's start unchanged)."""
    if not lead:
        return list(examples)
    return [
        replace(e, prompt=e.prompt + lead, answer_prefix=(e.answer_prefix or "") + lead)
        for e in examples
    ]
