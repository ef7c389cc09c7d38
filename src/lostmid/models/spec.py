"""A model as the user named it: where it is, how it loads, how it is prompted.

A :class:`ModelSpec` is the one description of a model that every command loading one
builds from its options and hands to the one loader path, :meth:`ModelSpec.load`: the
model (a registry checkpoint, a preset, a Hugging Face folder, a GGUF file or a cached
hub id: whatever :func:`lostmid.models.load_model` reads), its tokenizer when it is not
the model's own, the dtype and device it runs in, an accelerate device map, whether
the custom code its config names may run, and how it is prompted (its chat template:
``auto`` applies the template its tokenizer carries; the answer prefix: ``on`` starts
the answer inside the prompt). ``lostmid measure``, ``retrieve``, ``remedies``,
``ablate``, ``diagnose`` and the stages of ``reproduce`` all load through it.

Only the options a user changed enter a stage's record (:meth:`ModelSpec.options`), so
a run made before an option existed resumes unchanged; where it runs (``device``) is
the run's record, not the model's.

Torch-free, so that the CLI's help answers at once.

>>> spec = ModelSpec.of("./my-model")
>>> spec.name, spec.options()
('./my-model', {})
>>> ModelSpec("smollm2-135m", answer_prefix="off", dtype="bfloat16").options()
{'answer_prefix': 'off', 'dtype': 'bfloat16'}
>>> ModelSpec.from_record({"model": "m", "answer_prefix": "off", "depths": [0]})
ModelSpec(name='m', chat_template='auto', answer_prefix='off', tokenizer=None, \
dtype='float32', trust_remote_code=False, device_map=None, device='cpu')
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any

from lostmid.checks import check_choice
from lostmid.errors import UserError

if TYPE_CHECKING:
    from lostmid.models.loaded import LoadedModel

CHAT_TEMPLATES = ("auto", "on", "off")
"""``auto``: apply the tokenizer's chat template when it has one; ``on``: require it;
``off``: the raw prompt (a base model's format)."""
ANSWER_PREFIXES = ("on", "off")
"""``on``: the answer starts in the prompt (after the template's assistant tag when a
template is applied); ``off``: the prompt asks and stops."""
DTYPE_NAMES = ("float32", "float64", "bfloat16", "float16")
"""The dtypes a model loads in (:data:`lostmid.models.build.DTYPES`, torch-free)."""
NOT_RECORDED = ("name", "device")
"""Fields :meth:`ModelSpec.options` leaves out: the name is recorded as ``model``; the
device is where a run ran, in the run's record."""


def model_slug(model: str) -> str:
    """A model spec as a file or folder name: the stem of a run's stages, figures and
    folders of that model.

    >>> model_slug("Qwen/Qwen2-0.5B")
    'Qwen_Qwen2-0.5B'
    """
    return "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in model).strip("_")


@dataclass(frozen=True)
class ModelSpec:
    """A model, how it loads and how it is prompted (module doc); checked when made.

    Attributes:
        name: ``--model``.
        chat_template: ``--chat-template`` (:data:`CHAT_TEMPLATES`).
        answer_prefix: ``--answer-prefix`` (:data:`ANSWER_PREFIXES`).
        tokenizer: ``--tokenizer``: a tokenizer other than the model's own (None: its own).
        dtype: ``--dtype`` (:data:`DTYPE_NAMES`).
        trust_remote_code: ``--trust-remote-code``: run the custom code its config names.
        device_map: ``--device-map``: split or offload it through accelerate (None: whole
            on ``device``).
        device: ``--device``: ``cpu``, ``cuda[:N]`` or ``auto``.
    """

    name: str
    chat_template: str = "auto"
    answer_prefix: str = "on"
    tokenizer: str | None = None
    dtype: str = "float32"
    trust_remote_code: bool = False
    device_map: str | None = None
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not str(self.name).strip():
            raise UserError("the model spec is empty; give a checkpoint, folder or .gguf file")
        check_choice("--chat-template", self.chat_template, CHAT_TEMPLATES)
        check_choice("--answer-prefix", self.answer_prefix, ANSWER_PREFIXES)
        check_choice("--dtype", self.dtype, DTYPE_NAMES)
        if self.tokenizer is not None and not str(self.tokenizer).strip():
            raise UserError("--tokenizer is empty; give a directory, a cached hub id or bytes")

    @classmethod
    def of(cls, value: ModelSpec | str) -> ModelSpec:
        """``value`` itself, or a spec of that name with the default prompt format."""
        return value if isinstance(value, ModelSpec) else cls(str(value))

    @classmethod
    def from_fields(cls, config: Any) -> ModelSpec:
        """The spec of a command's config: its ``model`` and whichever of this class's
        fields the config has of the same name (the others at their defaults).

        >>> from types import SimpleNamespace
        >>> ModelSpec.from_fields(SimpleNamespace(model="m", dtype="float64", seed=3)).dtype
        'float64'
        """
        names = {f.name for f in fields(cls)} - {"name"}
        return cls(
            str(config.model), **{k: getattr(config, k) for k in names if hasattr(config, k)}
        )

    @classmethod
    def from_record(cls, record: Mapping[str, Any], device: str = "cpu") -> ModelSpec:
        """The spec a stage's record names: ``model`` and the fields of :meth:`options`
        it holds (other keys ignored), on ``device``."""
        known = {f.name for f in fields(cls)} - set(NOT_RECORDED)
        return cls(
            str(record["model"]),
            device=device,
            **{k: v for k, v in record.items() if k in known},
        )

    def config_fields(self) -> dict[str, Any]:
        """This model as the fields of a command's config that loads it (the inverse of
        :meth:`from_fields`): ``model`` and how it loads and is prompted; where it runs
        (``device``, ``device_map``) is left to the command.

        >>> ModelSpec("m", dtype="float64").config_fields()["dtype"]
        'float64'
        """
        return {
            "model": self.name,
            "chat_template": self.chat_template,
            "answer_prefix": self.answer_prefix,
            "tokenizer": self.tokenizer,
            "dtype": self.dtype,
            "trust_remote_code": self.trust_remote_code,
        }

    def claim(self, record: Mapping[str, Any]) -> dict[str, Any]:
        """A run's claim (``record``, its resolved configuration) with this model and its
        tokenizer known by content (:func:`lostmid.models.identity.identified`): a model
        changed in place is another configuration; a path spelled another way is not."""
        from lostmid.models.identity import identified

        return identified(record, (self.name, self.tokenizer))

    def options(self) -> dict[str, Any]:
        """The options that differ from the defaults (what a stage records)."""
        return {
            f.name: getattr(self, f.name)
            for f in fields(self)
            if f.name not in NOT_RECORDED and getattr(self, f.name) != f.default
        }

    def load(
        self,
        *,
        init: str,
        seed: int = 0,
        config_overrides: Mapping[str, Any] | None = None,
        attention: str = "sdpa",
        no_rope: bool = False,
        no_pos_emb: bool = False,
        no_alibi: bool = False,
        size_check: bool = True,
    ) -> LoadedModel:
        """The model, loaded (:func:`lostmid.models.load_model` with this spec's options);
        ``init`` (``random``, ``pretrained`` or ``auto``: said at every call), ``seed``, the
        config overrides, the attention kernel and the encoding
        ablations are the study's, not the model's. The one call every command makes.

        >>> ModelSpec("tiny-qwen2").load(init="random", seed=1).num_layers
        2
        """
        from lostmid.models.load import load_model

        return load_model(
            self.name,
            init=init,
            seed=seed,
            no_rope=no_rope,
            no_pos_emb=no_pos_emb,
            no_alibi=no_alibi,
            dtype=self.dtype,
            device=self.device,
            config_overrides=dict(config_overrides) if config_overrides else None,
            attn_implementation=attention,
            device_map=self.device_map,
            trust_remote_code=self.trust_remote_code,
            size_check=size_check,
        )


class LoadsModel:
    """A command's config that loads a model: its :attr:`model_spec` is made from its
    fields of the names of :class:`ModelSpec`'s (``model``, ``dtype``, ``device``, ...)."""

    @property
    def model_spec(self) -> ModelSpec:
        """The model, how it loads and how it is prompted (:meth:`ModelSpec.from_fields`)."""
        if getattr(self, "model", None) is None:
            raise ValueError(f"{type(self).__name__} names no model")
        return ModelSpec.from_fields(self)
