"""A model as the user named it, with the prompt format that travels with it.

A :class:`ModelSpec` is what the trained-model studies (``lostmid diagnose``, the
sections of ``lostmid reproduce --trained``) pass from the command line to each stage:
the model (a registry checkpoint, a preset, a Hugging Face folder, a GGUF file or a
cached hub id: whatever :func:`lostmid.models.load_model` reads) and how it is prompted
(its chat template: ``auto`` applies the template its tokenizer carries; the answer
prefix: ``on`` starts the answer inside the prompt). Only the options a user changed
enter a stage's record, so a run made before an option existed resumes unchanged.

Torch-free, so that the CLI's help answers at once.

>>> spec = ModelSpec.of("./my-model")
>>> spec.name, spec.options()
('./my-model', {})
>>> ModelSpec("smollm2-135m", answer_prefix="off").options()
{'answer_prefix': 'off'}
"""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from lostmid.checks import check_choice
from lostmid.errors import UserError

CHAT_TEMPLATES = ("auto", "on", "off")
"""``auto``: apply the tokenizer's chat template when it has one; ``on``: require it;
``off``: the raw prompt (a base model's format)."""
ANSWER_PREFIXES = ("on", "off")
"""``on``: the answer starts in the prompt (after the template's assistant tag when a
template is applied); ``off``: the prompt asks and stops."""


@dataclass(frozen=True)
class ModelSpec:
    """A model spec and its prompt format (module doc); checked when made."""

    name: str
    chat_template: str = "auto"
    answer_prefix: str = "on"

    def __post_init__(self) -> None:
        if not str(self.name).strip():
            raise UserError("the model spec is empty; give a checkpoint, folder or .gguf file")
        check_choice("--chat-template", self.chat_template, CHAT_TEMPLATES)
        check_choice("--answer-prefix", self.answer_prefix, ANSWER_PREFIXES)

    @classmethod
    def of(cls, value: ModelSpec | str) -> ModelSpec:
        """``value`` itself, or a spec of that name with the default prompt format."""
        return value if isinstance(value, ModelSpec) else cls(str(value))

    def options(self) -> dict[str, Any]:
        """The prompt options that differ from the defaults (what a stage records)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name != "name" and getattr(self, f.name) != f.default
        }
