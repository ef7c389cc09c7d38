"""Tokenizers for retrieval: a Hugging Face tokenizer, or the byte tokenizer of lostmid.

``lostmid train`` (and :func:`lostmid.behaviour.training.run_retrieval_training`) trains byte
models: token ids are UTF-8 bytes (:func:`lostmid.train.corpus.encode`). Their
checkpoints (``OUT/checkpoints/step_NNNNNN/``, ``save_pretrained`` files only) carry no
tokenizer files, so a checkpoint is recognised as a byte model when it holds
``lostmid_tokenizer.json`` (written by ``run_retrieval_training``) or sits in the
``checkpoints/`` folder of a ``lostmid train`` run (a ``dynamics.json`` next to it).

>>> tok = load_tokenizer("bytes")
>>> tok.encode("hé"), tok.decode([104, 195, 169]), tok.vocab_size
([104, 195, 169], 'hé', 256)
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from lostmid.errors import UserError
from lostmid.files import check_directory, load_auto_tokenizer, write_text
from lostmid.models.spec import ModelSpec

BYTES = "bytes"
MARKER = "lostmid_tokenizer.json"
_TOKENIZER_FILES = (
    "tokenizer.json",
    "tokenizer_config.json",
    "tokenizer.model",
    "vocab.json",
    "spiece.model",
)


class Tokenizer(Protocol):
    """What retrieval needs from a tokenizer."""

    @property
    def name(self) -> str:
        """What the tokenizer is (``bytes``, a directory, a hub id)."""
        ...

    @property
    def vocab_size(self) -> int:
        """The number of token ids."""
        ...

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        """Token ids of ``text``; ``special`` adds the model's prefix tokens (BOS)."""
        ...

    def decode(self, ids: list[int]) -> str: ...

    @property
    def eos_id(self) -> int | None:
        """The end-of-sequence id (greedy answers are cut there), or None."""
        ...

    @property
    def bos_id(self) -> int | None:
        """The beginning-of-sequence id, or None."""
        ...

    @property
    def chat_template(self) -> str | None:
        """The chat template (Jinja), or None when the tokenizer has none."""
        ...

    def render_chat(self, user: str) -> str:
        """``user`` as one user turn with the generation prompt, as text."""
        ...


@dataclass(frozen=True)
class ByteTokenizer:
    """UTF-8 bytes as token ids (0..255): lostmid's training tokenizer."""

    name: str = BYTES
    vocab_size: int = 256

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        from lostmid.train.corpus import encode

        return encode(text).tolist()

    def decode(self, ids: list[int]) -> str:
        return bytes(i for i in ids if 0 <= i < 256).decode("utf-8", errors="replace")

    @property
    def eos_id(self) -> int | None:
        return None

    @property
    def bos_id(self) -> int | None:
        return None

    @property
    def chat_template(self) -> str | None:
        return None

    def render_chat(self, user: str) -> str:
        raise UserError("the byte tokenizer has no chat template; use --chat-template off")


class HFTokenizer:
    """A Hugging Face tokenizer (``AutoTokenizer``) behind the :class:`Tokenizer` calls."""

    def __init__(self, tokenizer: Any, name: str) -> None:
        self.tokenizer = tokenizer
        self.name = name
        self.vocab_size = len(tokenizer)

    def encode(self, text: str, *, special: bool = False) -> list[int]:
        return list(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    def decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))

    @property
    def eos_id(self) -> int | None:
        value = getattr(self.tokenizer, "eos_token_id", None)
        return None if value is None else int(value)

    @property
    def bos_id(self) -> int | None:
        value = getattr(self.tokenizer, "bos_token_id", None)
        return None if value is None else int(value)

    @property
    def chat_template(self) -> str | None:
        template = getattr(self.tokenizer, "chat_template", None)
        return template if isinstance(template, str) and template.strip() else None

    def render_chat(self, user: str) -> str:
        """The user turn and the generation prompt, through the tokenizer's template.

        transformers renders templates in jinja2's sandbox, so a template that reaches
        for Python internals stops with a SecurityError; that, and every other way a
        template's own code fails (a syntax error, ``{{ 1/0 }}``'s ZeroDivisionError,
        ``range(10**9)``'s OverflowError, a TypeError ...), is one line here.
        """
        try:
            rendered = self.tokenizer.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
        except Exception as err:  # the template is the file's code: any error is its own
            first = str(err).splitlines()[0][:120] if str(err).strip() else ""
            raise UserError(
                f"{self.name}: its chat template cannot be rendered ({type(err).__name__}"
                f"{': ' + first if first else ''}); fix the template, or use --chat-template off"
            ) from None
        if not isinstance(rendered, str):
            raise UserError(
                f"{self.name}: its chat template did not render text; use --chat-template off"
            )
        return rendered


def write_byte_marker(directory: Path, **facts: Any) -> Path:
    """Mark a checkpoint directory as a byte-tokenizer model (``lostmid_tokenizer.json``)."""
    return write_text(
        Path(directory) / MARKER, json.dumps({"kind": BYTES, **facts}, indent=1) + "\n"
    )


def is_byte_checkpoint(directory: Path) -> bool:
    """True for a checkpoint written by ``lostmid train`` or ``run_retrieval_training``."""
    directory = Path(directory)
    if (directory / MARKER).is_file():
        return True
    run = directory.parent.parent
    return directory.parent.name == "checkpoints" and (run / "dynamics.json").is_file()


def has_tokenizer_files(directory: Path) -> bool:
    return any((Path(directory) / name).is_file() for name in _TOKENIZER_FILES)


# Tokenizers read from a directory in this process, by their files' stamps: a large one is
# seconds to build (Gemma 3's 262,144-entry tokenizer.json: 5.6 s in transformers, 2.5 s
# in the Rust reader alone) and a long-lived worker asks for it at every stage. lostmid
# never changes a tokenizer after loading it, so the object is shared.
_LOADED: OrderedDict[tuple[Any, ...], Any] = OrderedDict()
_LOADED_MAX = 4


def _files_stamp(source: str) -> tuple[Any, ...] | None:
    """(path, then name, size and mtime of each tokenizer file) of a directory; None for a
    hub id (not memoised)."""
    path = Path(source)
    if not path.is_dir():
        return None
    stamp: list[Any] = [str(path.resolve())]
    for name in sorted(os.listdir(path)):
        if name in _TOKENIZER_FILES or name.startswith(("special_tokens", "chat_template")):
            info = (path / name).stat()
            stamp.append((name, info.st_size, info.st_mtime_ns))
    return tuple(stamp)


def _auto_tokenizer(source: str, what: str, trust_remote_code: bool = False) -> HFTokenizer:
    """A Hugging Face tokenizer from local files (:func:`lostmid.files.load_auto_tokenizer`:
    custom code refused unless trusted); a directory's is built once per process while its
    files are unchanged."""
    stamp = _files_stamp(source)
    key = None if stamp is None else (*stamp, trust_remote_code)
    if key is not None and key in _LOADED:
        _LOADED.move_to_end(key)
        return HFTokenizer(_LOADED[key], source)
    tok = load_auto_tokenizer(source, what=what, trust_remote_code=trust_remote_code)
    if key is not None:
        _LOADED[key] = tok
        while len(_LOADED) > _LOADED_MAX:
            _LOADED.popitem(last=False)
    return HFTokenizer(tok, source)


def _directory_tokenizer(
    path: Path, what: str, trust_remote_code: bool = False
) -> Tokenizer | None:
    """A directory's own tokenizer files, else the byte tokenizer of a lostmid checkpoint
    there, else None; ``what`` names the option in error messages."""
    if has_tokenizer_files(path):
        return _auto_tokenizer(str(path), what, trust_remote_code)
    if is_byte_checkpoint(path):
        return ByteTokenizer()
    return None


def load_tokenizer(spec: str, trust_remote_code: bool = False) -> Tokenizer:
    """``bytes``, a local directory with tokenizer files, a lostmid byte checkpoint, or
    a hub id whose tokenizer is in the local cache (nothing is downloaded).

    Raises:
        UserError: one line when no tokenizer can be found for ``spec``.
    """
    if spec == BYTES:
        return ByteTokenizer()
    path = Path(spec).expanduser()
    if path.is_dir():
        check_directory(path, "--tokenizer")
        found = _directory_tokenizer(path, f"--tokenizer {spec}", trust_remote_code)
        if found is not None:
            return found
        raise UserError(
            f"--tokenizer {spec}: no tokenizer files in that directory; give one with "
            "tokenizer.json (or tokenizer_config.json), or --tokenizer bytes"
        )
    if path.exists():
        raise UserError(f"--tokenizer {spec}: a file; give a directory or a cached hub id")
    if spec.startswith(("/", ".", "~")) or os.sep in spec.strip("/").replace("/", "", 1):
        raise UserError(
            f"--tokenizer {spec}: no such directory; give a folder with tokenizer files, a "
            "cached hub id (owner/name) or bytes"
        )
    return _auto_tokenizer(spec, f"--tokenizer {spec}", trust_remote_code)


def tokenizer_for_spec(spec: ModelSpec) -> Tokenizer:
    """The tokenizer of a :class:`~lostmid.models.spec.ModelSpec`: its ``tokenizer`` when
    given, else the model's own (:func:`tokenizer_for_model`)."""
    return tokenizer_for_model(spec.name, spec.tokenizer, spec.trust_remote_code)


def tokenizer_for_model(
    model: str, tokenizer: str | None = None, trust_remote_code: bool = False
) -> Tokenizer:
    """The tokenizer of ``--model``: ``tokenizer`` if given, else the model directory's
    own files, the byte tokenizer of a lostmid checkpoint, or a cached hub tokenizer.

    Raises:
        UserError: one line when the model has none (a preset, a bare config directory).
    """
    if tokenizer is not None:
        return load_tokenizer(tokenizer, trust_remote_code)
    from lostmid.models import local_model_dir

    path = local_model_dir(model) or Path(model).expanduser()  # a GGUF's: its cache folder
    if path.is_dir():
        found = _directory_tokenizer(path, f"--model {model}", trust_remote_code)
        if found is not None:
            return found
    else:
        from lostmid.models import MODEL_PRESETS

        if model not in MODEL_PRESETS:
            try:
                return _auto_tokenizer(model, f"--model {model}", trust_remote_code)
            except UserError:
                pass
    raise UserError(
        f"--model {model} has no tokenizer; pass --tokenizer DIR (tokenizer files), a cached "
        "hub id, or --tokenizer bytes for a byte-level model"
    )
