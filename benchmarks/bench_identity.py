"""What knowing a model by its content costs (lostmid.models.identity): the sha256 of a
registry checkpoint's GGUF file and of a Hugging Face folder (the SmolLM2 file
dequantised into float32 safetensors, lostmid's own cache of it), once cold (nothing
remembered: every byte read) and once warm (remembered by path, inode, size and mtime),
each in a fresh cache so the two are what a first and a second run pay.

    python benchmarks/bench_identity.py

Prints a table: model, bytes hashed, cold seconds, warm seconds, cold MB/s.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from lostmid.models import CHECKPOINTS
from lostmid.models.identity import _content_files, content_of
from lostmid.models.load import local_model_dir


def _timed(name: str) -> float:
    start = time.perf_counter()
    content_of(name)
    return time.perf_counter() - start


def _size(path: Path) -> int:
    if path.is_file():
        return path.stat().st_size
    return sum(p.stat().st_size for p in _content_files(path))


def main() -> None:
    cases = {f"{name} (.gguf file by path)": CHECKPOINTS[name].locate() for name in CHECKPOINTS}
    folder = local_model_dir("smollm2-135m")  # dequantised: config, tokenizer, safetensors
    if folder is not None:
        cases["smollm2-135m dequantised (HF folder)"] = folder
    print(f"load {os.getloadavg()[0]:.2f}, {os.cpu_count()} cores")
    print(f"{'model':<42} {'MB':>8} {'cold s':>8} {'warm s':>8} {'MB/s':>7}")
    for label, path in cases.items():
        with tempfile.TemporaryDirectory() as cache:
            os.environ["LOSTMID_CACHE"] = cache  # nothing remembered: every byte is read
            cold = _timed(str(path))
            warm = min(_timed(str(path)) for _ in range(3))
        mb = _size(path) / 1e6
        print(f"{label:<42} {mb:8.0f} {cold:8.2f} {warm:8.4f} {mb / cold:7.0f}")


if __name__ == "__main__":
    main()
