"""Everything lostmid reads from disk, and how it writes there: one boundary.

Reading. Each reader turns any failure into one :class:`~lostmid.errors.UserError`
naming the file, what is wrong with it and what to do:

* :func:`read_json` / :func:`read_result`: JSON, and lostmid's result files by kind
  (:data:`RESULT_KINDS`): the ``"schema"`` tag is checked, so a ``measure.json`` given
  where a ``theory.json`` belongs is refused by name;
* :func:`read_bytes`: corpora and other raw inputs;
* :func:`load_torch`: torch files, only with ``weights_only=True`` (a pickle that would
  run code is refused, never executed);
* :func:`model_config`, :func:`load_weights`, :func:`load_auto_tokenizer`: Hugging
  Face model directories. Weights come through safetensors or ``weights_only`` torch
  loading; a directory whose ``config.json`` or ``tokenizer_config.json`` names custom
  code (``auto_map``) is refused unless the caller passes ``trust_remote_code=True``
  (the user's explicit ``--trust-remote-code``); nothing here ever turns it on.

Writing. :func:`atomic_write` (and :func:`write_bytes`, :func:`write_text`,
:func:`save_torch`, :func:`atomic_directory`) write to a temporary name in the target's
folder and rename it into place (``os.replace``): a reader, or a rerun after a crash,
sees the old file or the new one, never half of one. A full disk (``ENOSPC``,
``EDQUOT``) becomes one line (:func:`disk_full_error`) and the temporary file is
removed, so nothing partial is left that a rerun would trust.

This module sits at the bottom of the package: it imports only :mod:`lostmid.errors`,
:mod:`lostmid.checks` and third-party libraries (torch and transformers lazily).

>>> import tempfile
>>> folder = Path(tempfile.mkdtemp())
>>> _ = write_text(folder / "theory.json", '{"schema": "lostmid.measure/1"}')
>>> read_result(folder / "theory.json", "theory", option="--theory")  # doctest: +ELLIPSIS
Traceback (most recent call last):
...
lostmid.errors.UserError: --theory ...theory.json: a measure result (schema lostmid.measure/1),
not a theory result; pass the theory.json of lostmid theory --out DIR
"""

from __future__ import annotations

import errno
import glob
import io
import json
import os
import pickle
import re
import secrets
import shutil
import stat
import warnings
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lostmid.errors import UserError

if TYPE_CHECKING:
    from transformers import PreTrainedModel

FULL_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})
_FULL_DISK_WORDS = ("no space left on device", "disk quota exceeded", "os error 28")


# -- result kinds ------------------------------------------------------------------------


@dataclass(frozen=True)
class ResultKind:
    """One kind of result file lostmid writes and reads back.

    Attributes:
        name: the kind (``theory``, ``measure``...), as messages name it.
        schema: the ``"schema"`` tag its writer puts in the file (``NAME/VERSION``).
        command: the ``metadata.command`` of files written before the tag existed.
        produced_by: what writes it, for the message that says what to pass instead.
    """

    name: str
    schema: str
    command: str
    produced_by: str

    @property
    def family(self) -> str:
        """The tag without its version: ``lostmid.theory``."""
        return self.schema.rpartition("/")[0]


RESULT_KINDS: Mapping[str, ResultKind] = {
    kind.name: kind
    for kind in (
        ResultKind("theory", "lostmid.theory/1", "theory", "the theory.json of lostmid theory"),
        ResultKind("score", "lostmid.score/1", "score", "the score.json of lostmid score"),
        ResultKind(
            "measure", "lostmid.measure/1", "measure", "the measure.json of lostmid measure"
        ),
        ResultKind(
            "training", "lostmid.train.dynamics/2", "train", "the dynamics.json of lostmid train"
        ),
        ResultKind(
            "retrieval training",
            "lostmid.behaviour.retrieval_train/1",
            "train-retrieval",
            "the retrieval.json of lostmid train --task kv|mqar",
        ),
        ResultKind(
            "remedies", "lostmid.remedies/1", "remedies", "the remedies.json of lostmid remedies"
        ),
        ResultKind(
            "retrieval", "lostmid.retrieve/1", "retrieve", "the retrieve.json of lostmid retrieve"
        ),
        ResultKind(
            "compare", "lostmid.compare/1", "compare", "the compare.json of lostmid compare"
        ),
        ResultKind("ablation", "lostmid.ablate/1", "ablate", "the ablation.json of lostmid ablate"),
        ResultKind("sweep", "lostmid.sweep/1", "sweep", "the sweep.json of lostmid sweep"),
        ResultKind(
            "dose",
            "lostmid.behaviour.dose/1",
            "sweep",
            "the dose.json of lostmid sweep --task train-retrieval",
        ),
        ResultKind("series", "lostmid.series/1", "series", "the series.json of lostmid series"),
        ResultKind(
            "reproduce",
            "lostmid.reproduce/1",
            "reproduce",
            "the reproduce.json of lostmid reproduce",
        ),
    )
}
"""Every kind of result file lostmid writes, by name: each writer takes its tag from
here (those without a tag yet are known by their ``metadata.command``), and
:func:`read_result` names the kind of a file given in the wrong place."""


def check_out_dir(out: Path) -> Path:
    """``out`` as a Path, refused in one line when it names a file (every ``--out`` is a
    directory); the one place this is checked.

    >>> check_out_dir(Path("results/run")).name
    'run'
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        raise UserError(f"--out {out} is a file; give a directory")
    return out


def schema_of(kind: str) -> str:
    """The schema tag a result of ``kind`` carries.

    >>> schema_of("training")
    'lostmid.train.dynamics/2'
    """
    return RESULT_KINDS[kind].schema


def _named(path: Path, option: str | None) -> str:
    return f"{option} {path}" if option else str(path)


def _one_line(err: BaseException) -> str:
    """An exception as one short line; torch's long ``weights_only`` refusal as what it
    refused (``Unsupported global: GLOBAL posix.system``)."""
    text = " ".join(str(err).split())
    if "Weights only load failed" in text:
        end = r"(.*?)(?: Check the documentation|$)"
        refused = re.search("WeightsUnpickler error: " + end, text) or re.search(
            r"trusted source\. " + end, text
        )
        what = refused.group(1)[:160] if refused else "it holds more than weights"
        return f"weights_only refused it: {what}; nothing in it was run"
    return f"{type(err).__name__}: {text[:200]}" if text else type(err).__name__


# -- reading -----------------------------------------------------------------------------


class DuplicateKeyError(ValueError):
    """A JSON object that names one key twice (``json`` would keep the last silently)."""


def refuse_duplicate_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads`: a dict, or :class:`DuplicateKeyError`
    when a key comes twice (which of the two a reader keeps is a guess, so none is kept).

    >>> json.loads('{"a": 1, "a": 2}', object_pairs_hook=refuse_duplicate_keys)
    Traceback (most recent call last):
    ...
    lostmid.files.DuplicateKeyError: key 'a' twice in one object
    """
    found = dict(pairs)
    if len(found) != len(pairs):
        seen: set[str] = set()
        for key, _ in pairs:
            if key in seen:
                raise DuplicateKeyError(f"key {key!r} twice in one object")
            seen.add(key)
    return found


class TooDeepError(ValueError):
    """JSON nested past what the parser's recursion takes (``json`` raises
    RecursionError, which no reader expects)."""


def loads(text: str) -> Any:
    """The project's JSON rule, for a reader that handles a failure itself (a cache or a
    file lostmid wrote, recomputed when damaged): ``json.loads`` with a key twice refused
    (:class:`DuplicateKeyError`) and nesting too deep (:class:`TooDeepError`); every
    failure is a ``ValueError``, a number past 4,300 digits included.
    :func:`parse_json` is this rule with one line naming the file.

    >>> loads("[" * 200_000 + "]" * 200_000)
    Traceback (most recent call last):
    ...
    lostmid.files.TooDeepError: JSON nested too deeply to read
    """
    try:
        return json.loads(text, object_pairs_hook=refuse_duplicate_keys)
    except RecursionError:
        raise TooDeepError("JSON nested too deeply to read") from None


def _check_file(path: Path, option: str | None, what: str) -> None:
    name = _named(path, option)
    try:
        mode = path.stat().st_mode
    except PermissionError:
        raise UserError(f"{name}: cannot be reached (permission denied); pass {what}") from None
    except OSError:
        raise UserError(f"{name}: no such file; pass {what}") from None
    if stat.S_ISDIR(mode):
        raise UserError(f"{name}: a directory, not a file; pass {what}")
    if not stat.S_ISREG(mode):
        kind = "a FIFO" if stat.S_ISFIFO(mode) else "a device or socket"
        raise UserError(f"{name}: {kind}, not a regular file (never read); pass {what}")


def read_bytes(path: Path, *, option: str | None = None, what: str = "a readable file") -> bytes:
    """The bytes of ``path``, or one line saying why they cannot be read."""
    path = Path(path)
    _check_file(path, option, what)
    try:
        return path.read_bytes()
    except OSError as err:
        raise UserError(
            f"{_named(path, option)}: cannot be read ({err.strerror or _one_line(err)}); "
            "check its permissions"
        ) from None


def read_text(path: Path, *, option: str | None = None, what: str = "a text file") -> str:
    """The UTF-8 text of ``path``, or one line saying why it cannot be read.

    >>> import tempfile
    >>> bad = Path(tempfile.mkdtemp()) / "b.jsonl"
    >>> _ = bad.write_bytes(b"ok\\x80")
    >>> try:
    ...     read_text(bad, option="--samples")
    ... except UserError as err:
    ...     print(str(err).split(": ", 1)[1])
    not UTF-8 text (byte 2 is 0x80); give a text file
    """
    data = read_bytes(path, option=option, what=what)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        raise UserError(
            f"{_named(Path(path), option)}: not UTF-8 text (byte {err.start} is "
            f"0x{data[err.start]:02x}); give {what}"
        ) from None


def read_json(
    path: Path,
    *,
    option: str | None = None,
    what: str = "a JSON file written by lostmid",
) -> Any:
    """The JSON document in ``path``, or one line naming the file and the problem.

    >>> read_json(Path("/no/such.json"), option="--theory")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --theory /no/such.json: no such file;
    pass a JSON file written by lostmid
    """
    path = Path(path)
    data = read_bytes(path, option=option, what=what)
    name = _named(path, option)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UserError(f"{name}: not a text file (not UTF-8); pass {what}") from None
    return parse_json(text, name, f"it is damaged or not {what}: rewrite it, or pass another")


def parse_json(text: str, where: str, advice: str = "fix the file") -> Any:
    """One JSON document, or one line naming ``where`` (a file, ``--data FILE line 3``,
    an option) for every way text fails to be one: malformed (with ``advice``), nested
    too deeply, a key twice in one object, an integer past Python's 4,300 digits.

    >>> parse_json('{"n": ' + "9" * 5000 + "}", "--theory t.json")
    Traceback (most recent call last):
    ...
    lostmid.errors.UserError: --theory t.json: a number of more than 4,300 digits; fix the file
    """
    try:
        return loads(text)
    except json.JSONDecodeError as err:
        what = f"not valid JSON ({err.msg} at line {err.lineno})"
        raise UserError(f"{where}: {what}; {advice}") from None
    except DuplicateKeyError as err:
        raise UserError(f"{where}: {err} (which one counts is a guess); fix the file") from None
    except TooDeepError:
        raise UserError(f"{where}: JSON nested too deeply to read; {advice}") from None
    except ValueError:  # int(): past sys.get_int_max_str_digits()
        raise UserError(f"{where}: a number of more than 4,300 digits; {advice}") from None


def read_json_object(path: Path, *, option: str | None = None, what: str = "") -> dict[str, Any]:
    """:func:`read_json`, requiring a JSON object at the top."""
    what = what or "a JSON object written by lostmid"
    data = read_json(path, option=option, what=what)
    if not isinstance(data, dict):
        raise UserError(f"{_named(Path(path), option)}: not a JSON object; pass {what}")
    return data


def kind_of(document: Mapping[str, Any]) -> ResultKind | None:
    """The known kind of a result document: by its schema tag, else (files written
    before the tags) by its ``metadata.command``; None when neither says."""
    tag = document.get("schema")
    if isinstance(tag, str):
        family = tag.rpartition("/")[0] or tag
        return next((k for k in RESULT_KINDS.values() if k.family == family), None)
    metadata = document.get("metadata")
    command = metadata.get("command") if isinstance(metadata, Mapping) else None
    return next((k for k in RESULT_KINDS.values() if k.command == command), None)


def read_result(path: Path, kind: str, *, option: str | None = None) -> dict[str, Any]:
    """A lostmid result file of ``kind`` (:data:`RESULT_KINDS`), its kind checked.

    A file with another kind's tag, another version of this kind's tag, or an unknown
    tag is refused in one line; a file without a tag (written before the tags) is
    accepted unless its ``metadata.command`` names another command.
    """
    path = Path(path)
    want = RESULT_KINDS[kind]
    name = _named(path, option)
    document = read_json_object(path, option=option, what=want.produced_by)
    tag = document.get("schema")
    if tag == want.schema:
        return document
    found = kind_of(document)
    if tag is None and (found is None or found is want):
        return document  # written before the tags: read by its layout
    if found is not None and found is not want:
        what = f"schema {tag}" if tag is not None else f"written by lostmid {found.command}"
        raise UserError(
            f"{name}: a {found.name} result ({what}), not a {want.name} result; pass "
            f"{want.produced_by} --out DIR"
        )
    if found is want:
        raise UserError(
            f"{name}: schema {tag!r}, this lostmid reads {want.schema!r}; rerun the command "
            "that wrote it with this version"
        )
    raise UserError(f"{name}: unknown schema {tag!r}; pass {want.produced_by} --out DIR")


def load_torch(
    path: Path,
    *,
    map_location: Any = "cpu",
    option: str | None = None,
    fix: str = "delete it and run again",
) -> Any:
    """A torch file read with ``weights_only=True`` (tensors, numbers, containers only):
    a pickle that would import or call anything is refused and never run. Any failure
    (missing, truncated, hostile) is one line naming the file and ``fix``."""
    import torch

    path = Path(path)
    _check_file(path, option, "a torch file written by lostmid")
    try:
        with warnings.catch_warnings():  # torch warns about the pickle protocol it reads
            warnings.simplefilter("ignore")
            return torch.load(path, map_location=map_location, weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError) as err:
        raise UserError(
            f"{_named(path, option)}: not a readable torch file ({_one_line(err)}); it is "
            f"damaged or holds more than weights, which lostmid never unpickles; {fix}"
        ) from None
    except OSError as err:
        raise UserError(
            f"{_named(path, option)}: cannot be read ({err.strerror or _one_line(err)}); {fix}"
        ) from None


def load_safetensors(path: Path, *, option: str | None = None) -> dict[str, Any]:
    """The tensors of a ``.safetensors`` file, or one line if it is damaged."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    _check_file(path, option, "a .safetensors file")
    try:
        return load_file(path)
    except (SafetensorError, OSError, ValueError) as err:
        raise UserError(
            f"{_named(path, option)}: not a readable safetensors file ({_one_line(err)}); "
            "it is truncated or damaged: save it again"
        ) from None


# -- model directories -------------------------------------------------------------------

WEIGHT_PATTERNS = ("*.safetensors", "pytorch_model*.bin", "model*.bin")
"""The weight files of a Hugging Face model directory (safetensors first)."""
_CODE_CONFIGS = ("config.json", "tokenizer_config.json")


@contextmanager
def quiet_transformers() -> Iterator[None]:
    """transformers' warnings, log lines and progress bars off while it reads a model:
    what goes wrong is lostmid's one line, not its chatter before it."""
    from transformers.utils import logging as hf_logging

    verbosity = hf_logging.get_verbosity()
    bars = hf_logging.is_progress_bar_enabled()
    hf_logging.set_verbosity_error()
    hf_logging.disable_progress_bar()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(verbosity)
        if bars:
            hf_logging.enable_progress_bar()


def weight_files(folder: Path) -> list[Path]:
    """The weight files in ``folder`` (:data:`WEIGHT_PATTERNS`), sorted."""
    return sorted({p for pattern in WEIGHT_PATTERNS for p in Path(folder).glob(pattern)})


def remote_code(folder: Path) -> list[str]:
    """What custom code the directory's configs name (their ``auto_map`` entries),
    as ``FILE: CLASS -> MODULE.NAME``; empty when none."""
    found = []
    for name in _CODE_CONFIGS:
        path = Path(folder) / name
        if not path.is_file():
            continue
        data = read_json(path, what=f"the {name} of a Hugging Face model")
        auto_map = data.get("auto_map") if isinstance(data, dict) else None
        if isinstance(auto_map, Mapping):
            found += [f"{name}: {cls} -> {target}" for cls, target in auto_map.items()]
        elif auto_map is not None:
            found.append(f"{name}: auto_map {auto_map!r}")
    return found


def check_remote_code(folder: Path, trust_remote_code: bool, option: str = "--model") -> None:
    """One line refusing a directory that names custom code, unless the user trusts it."""
    names = remote_code(folder)
    if names and not trust_remote_code:
        raise UserError(
            f"{option} {folder}: its configs name custom code ({names[0]}); lostmid runs no "
            "code from a model directory unless you pass --trust-remote-code (only for code "
            "you have read)"
        )


def check_directory(folder: Path, option: str) -> None:
    """One line when ``folder`` cannot be listed (``PermissionError``: the user may not
    read it), instead of a traceback or "no config.json" from the first file looked for."""
    try:
        with os.scandir(folder) as entries:
            next(entries, None)
    except PermissionError:
        raise UserError(
            f"{option} {folder}: cannot be read (permission denied); check its permissions, "
            "or give a copy you can read"
        ) from None
    except OSError:
        pass  # missing, not a directory: the caller's own check says which


def config_errors() -> tuple[type[Exception], ...]:
    """What transformers raises for a config it rejects: its own checks' ``ValueError``
    and friends, and huggingface_hub's strict-dataclass validation errors (a
    ``num_hidden_layers`` that disagrees with ``layer_types``, a field of the wrong
    type), which derive from ``Exception`` only."""
    found: list[type[Exception]] = [OSError, ValueError, KeyError, TypeError, AttributeError]
    try:
        from huggingface_hub.errors import StrictDataclassError

        found.append(StrictDataclassError)
    except ImportError:  # an older huggingface_hub: no strict dataclasses
        pass
    return tuple(found)


def model_config(folder: Path, *, trust_remote_code: bool = False, option: str = "--model") -> Any:
    """The transformers config of a model directory, read without running its code
    (see :func:`check_remote_code`); one line if it cannot be read."""
    from transformers import AutoConfig

    folder = Path(folder)
    check_directory(folder, option)
    config_path = folder / "config.json"
    if not config_path.is_file():
        raise UserError(f"{option} {folder}: no config.json in that directory")
    read_json_object(config_path, option=option, what="the config.json of a Hugging Face model")
    check_remote_code(folder, trust_remote_code, option)
    try:
        with quiet_transformers():
            return AutoConfig.from_pretrained(
                folder, local_files_only=True, trust_remote_code=trust_remote_code
            )
    except config_errors() as err:
        raise UserError(
            f"{option} {folder}: transformers rejects its config.json ({_one_line(err)}); "
            "fix the config"
        ) from None


def load_weights(
    location: str | Path,
    *,
    config: Any,
    trust_remote_code: bool = False,
    option: str = "--model",
    **kwargs: Any,
) -> PreTrainedModel:
    """``AutoModelForCausalLM.from_pretrained(location, config=config, **kwargs)`` with
    its code trust explicit and every failure to read the weights one line.

    transformers reads safetensors, and ``.bin`` files with ``weights_only=True`` (it
    refuses a pickle that would run code); a directory is checked for custom code
    first (:func:`check_remote_code`).
    """
    from safetensors import SafetensorError
    from transformers import AutoModelForCausalLM

    folder = Path(location)
    if folder.is_dir():
        check_remote_code(folder, trust_remote_code, option)
        files = weight_files(folder)
        named = f"{option} {folder} ({', '.join(p.name for p in files[:3])})"
    else:
        named = f"{option} {location}"
    try:
        with quiet_transformers():
            return AutoModelForCausalLM.from_pretrained(
                location, config=config, trust_remote_code=trust_remote_code, **kwargs
            )
    except (
        pickle.UnpicklingError,
        SafetensorError,
        OSError,
        EOFError,
        RuntimeError,
        ValueError,
        KeyError,
    ) as err:
        if isinstance(err, OSError) and is_disk_full(err):
            raise
        raise UserError(
            f"{named}: cannot load the weights ({_one_line(err)}); the files are damaged, "
            "truncated or not plain weights (lostmid loads safetensors, or .bin with "
            "weights_only): save them again, or use --init random"
        ) from None


BIN_CHECK_BYTES = 256 << 20
"""A ``.bin`` weight file in the old (not zip) layout is read whole to check it only up
to this size; a zip-layout one is checked through a memory map at any size."""


def check_weight_files(folder: Path, option: str = "--model") -> None:
    """One line, in seconds and before any stage starts, when a weight file of a model
    folder cannot be read as plain weights: a truncated or damaged safetensors file (its
    header must cover the file), a ``.bin`` that is not a ``weights_only`` torch file (a
    pickle that would run code is refused, never run). Nothing is loaded into memory."""
    import zipfile

    from safetensors import SafetensorError, safe_open

    for path in weight_files(Path(folder)):
        name = f"{option} {folder} ({path.name})"
        if path.suffix == ".safetensors":
            try:
                with safe_open(str(path), "pt") as handle:
                    handle.keys()
            except (SafetensorError, OSError, ValueError) as err:
                raise UserError(
                    f"{name}: not a readable safetensors file ({_one_line(err)}); it is "
                    "truncated or damaged: save it again"
                ) from None
            continue
        zipped = zipfile.is_zipfile(path)
        if not zipped and path.stat().st_size > BIN_CHECK_BYTES:
            continue  # read whole when the model loads, with the same rule
        import torch

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                torch.load(path, map_location="cpu", weights_only=True, mmap=zipped)
        except (pickle.UnpicklingError, RuntimeError, EOFError, ValueError, TypeError) as err:
            raise UserError(
                f"{name}: cannot load the weights ({_one_line(err)}); lostmid loads "
                "safetensors, or .bin with weights_only: save them as safetensors"
            ) from None


def load_auto_tokenizer(
    source: str, *, what: str, trust_remote_code: bool = False
) -> Any:  # transformers' PreTrainedTokenizerBase
    """``AutoTokenizer.from_pretrained(source)`` from local files only, its code trust
    explicit, quietly, with one line on failure (``what`` names the option)."""
    from transformers import AutoTokenizer

    if Path(source).is_dir():
        check_directory(Path(source), what.split(" ")[0])
        check_remote_code(Path(source), trust_remote_code, what.split(" ")[0])
    try:
        with quiet_transformers():
            return AutoTokenizer.from_pretrained(
                source, local_files_only=True, trust_remote_code=trust_remote_code
            )
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RuntimeError) as err:
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise UserError(f"{what}: cannot load a tokenizer ({first[:160]})") from None


# -- writing -----------------------------------------------------------------------------


def is_disk_full(err: BaseException) -> bool:
    """Whether ``err`` (or what caused it) says the disk or the quota is full."""
    seen: set[int] = set()
    current: BaseException | None = err
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in FULL_DISK_ERRNOS:
            return True
        if any(word in str(current).lower() for word in _FULL_DISK_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def disk_full_error(path: Path | str | None, err: BaseException | None = None) -> UserError:
    """The one line for a full disk while writing ``path``."""
    where = f"writing {path}: " if path is not None else ""
    why = (
        "disk quota exceeded"
        if isinstance(err, OSError) and err.errno == errno.EDQUOT
        else ("no space left on the device")
    )
    return UserError(
        f"{where}{why}; free some space or choose another --out, then run the same command "
        "again (finished results are kept; nothing half-written is left)"
    )


def cache_root() -> Path:
    """Where lostmid keeps what it derives once (dequantised checkpoints, stage costs):
    ``$LOSTMID_CACHE`` or ``~/.cache/lostmid``."""
    root = os.environ.get("LOSTMID_CACHE")
    return Path(root).expanduser() if root else Path.home() / ".cache" / "lostmid"


def _temporary(path: Path) -> Path:
    """A fresh, empty file next to ``path`` (same file system, so the rename is atomic),
    named ``.NAME.PID.RANDOM.tmp``; created with the permissions the umask gives."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
        try:
            os.close(os.open(tmp, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o666))
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name next to {path}")  # pragma: no cover


def _temporary_dir(path: Path, suffix: str = ".tmp") -> Path:
    """A fresh, empty folder next to ``path``, named like :func:`_temporary`'s files."""
    for _ in range(100):
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}{suffix}")
        try:
            tmp.mkdir()
        except FileExistsError:
            continue
        return tmp
    raise FileExistsError(f"no free temporary name next to {path}")  # pragma: no cover


def remove_leftovers(path: Path) -> list[Path]:
    """Remove the temporaries that writers of ``path`` left when they were killed (their
    ``finally`` never ran): files and folders named ``.NAME.PID.HEX.tmp`` or ``.old`` next
    to it. Call it only while holding the lock that every writer of ``path`` holds, so
    no temporary of a live writer is there. Returns what was removed.

    >>> import tempfile
    >>> root = Path(tempfile.mkdtemp())
    >>> (root / ".model.123.0a1b2c3d.tmp").mkdir()
    >>> _ = (root / ".model.9.ffffffff.tmp").write_bytes(b"half")
    >>> _ = (root / ".other.1.00000000.tmp").write_bytes(b"")
    >>> sorted(p.name for p in remove_leftovers(root / "model"))
    ['.model.123.0a1b2c3d.tmp', '.model.9.ffffffff.tmp']
    >>> sorted(p.name for p in root.iterdir())
    ['.other.1.00000000.tmp']
    """
    path = Path(path)
    found = [
        p
        for suffix in (".tmp", ".old")
        for p in path.parent.glob(f".{glob.escape(path.name)}.*.*{suffix}")
    ]
    for leftover in found:
        if leftover.is_dir() and not leftover.is_symlink():
            shutil.rmtree(leftover, ignore_errors=True)
        else:
            leftover.unlink(missing_ok=True)
    return found


def atomic_write(path: Path, write: Callable[[Path], None]) -> Path:
    """Run ``write(tmp)`` on a temporary file next to ``path``, then rename it to
    ``path``: the file is whole or absent, never partial. On any failure the temporary
    file is removed; a full disk becomes :func:`disk_full_error`."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temporary(path)
    except OSError as err:
        if is_disk_full(err):
            raise disk_full_error(path, err) from None
        raise
    try:
        write(tmp)
        os.replace(tmp, path)
    except BaseException as err:
        tmp.unlink(missing_ok=True)
        if is_disk_full(err):
            raise disk_full_error(path, err) from None
        raise
    return path


def _write_file(data: bytes) -> Callable[[Path], None]:
    def write(tmp: Path) -> None:
        with tmp.open("wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # on disk before the rename makes it the file

    return write


def write_bytes(path: Path, data: bytes) -> Path:
    """Write ``data`` to ``path`` atomically (see :func:`atomic_write`)."""
    return atomic_write(path, _write_file(data))


def write_text(path: Path, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically (see :func:`atomic_write`)."""
    return write_bytes(path, text.encode("utf-8"))


def save_torch(obj: Any, path: Path) -> Path:
    """``torch.save(obj)`` to ``path`` atomically; serialised in memory first, so a full
    disk is an ``OSError`` (one line), not torch's own writer error."""
    import torch

    buffer = io.BytesIO()
    torch.save(obj, buffer)
    return write_bytes(path, buffer.getvalue())


@contextmanager
def atomic_directory(path: Path) -> Iterator[Path]:
    """A temporary folder next to ``path`` to fill; on success it replaces ``path``
    (an old ``path`` is removed), on failure it is removed. A reader never sees a
    half-written directory under ``path``'s name."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = _temporary_dir(path)
    except OSError as err:
        if is_disk_full(err):
            raise disk_full_error(path, err) from None
        raise
    try:
        yield tmp
        if path.exists():
            old = _temporary_dir(path, ".old")
            os.replace(path, old / path.name)
            os.replace(tmp, path)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, path)
    except BaseException as err:
        shutil.rmtree(tmp, ignore_errors=True)
        if is_disk_full(err):
            raise disk_full_error(path, err) from None
        raise
