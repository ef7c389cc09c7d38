#!/usr/bin/env bash
# The GPU check of issue 12: one short script for a machine with an NVIDIA GPU.
#
#   1. the test suite's device-marked tests (pytest -m device);
#   2. lostmid measure on the qwen2-0.5b and gpt2 shapes at L = 2048 in float32 and in
#      bfloat16 on cuda, and the agreement of the two dtypes' profiles (W1 and the
#      largest relative difference at any position);
#   3. the wall time of lostmid reproduce --full (resumable: a run cut by the time limit
#      continues from its saved stages when run again with the same OUT).
# It prints one table (also OUT/summary.txt). About 10 minutes on an H200.
#
# Usage: bash benchmarks/gpu_check.sh   (from anywhere; logs in $OUT, default
#        results/gpu_check). Knobs (environment):
#   LOSTMID_PYTHON  a Python with lostmid and pytest installed; default .venv, made by
#                   scripts/setup.sh when missing (it keeps the machine's own torch)
#   MEASURE_SAMPLES, MEASURE_PROBES   per measure run (default 2 and 4)
#   REPRO_TIMEOUT   seconds allowed to reproduce --full (default 420; 0 skips it)
#   GPU_CHECK_PLUMBING=1  the same steps on the CPU at toy scale (tiny models, L = 64,
#                   reproduce --quick without training): tests this script, no GPU needed
# Exit code: 0 all steps ok (a reproduce TIMEOUT included), 1 a step failed, 2 no GPU
# or no set-up (then nothing ran).
set -uo pipefail # not -e: a failed step is a row of the table, and the others still run
cd "$(dirname "$0")/.." || exit 2

LOG=${OUT:-results/gpu_check}
mkdir -p "$LOG"
LOG=$(cd "$LOG" && pwd)
SAMPLES=${MEASURE_SAMPLES:-2}
PROBES=${MEASURE_PROBES:-4}
REPRO_TIMEOUT=${REPRO_TIMEOUT:-420}
if [ "${GPU_CHECK_PLUMBING:-0}" = 1 ]; then
    DEVICE=cpu LENGTH=64 QWEN=tiny-qwen2 GPT2=tiny-gpt2 REPRO=(--quick --train-steps 0)
else
    DEVICE=cuda LENGTH=2048 QWEN=qwen2-0.5b GPT2=gpt2 REPRO=(--full)
fi
ROWS="$LOG/rows.tsv" # step, status, seconds, detail
: >"$ROWS"

die() {
    echo "gpu_check: $*" >&2
    exit 2
}

# -- set-up ---------------------------------------------------------------------------
PY=${LOSTMID_PYTHON:-}
if [ -z "$PY" ]; then
    if ! .venv/bin/python -c "import lostmid, pytest" >/dev/null 2>&1; then
        echo "gpu_check: setting up .venv (scripts/setup.sh keeps an installed torch)"
        bash scripts/setup.sh >"$LOG/setup.log" 2>&1 ||
            die "scripts/setup.sh failed (log: $LOG/setup.log); without network, set LOSTMID_PYTHON to a Python that has lostmid and pytest"
    fi
    PY=.venv/bin/python
fi
"$PY" -c "import lostmid, pytest" 2>/dev/null || die "$PY cannot import lostmid and pytest"

if [ "$DEVICE" = cpu ]; then
    MACHINE="plumbing run on the CPU ($(getconf _NPROCESSORS_ONLN) cores)"
else
    if ! command -v nvidia-smi >/dev/null 2>&1; then
        die "no nvidia-smi here: this check needs a machine with an NVIDIA GPU (nothing was run)"
    fi
    if ! "$PY" -c "import sys, torch; sys.exit(0 if torch.cuda.is_available() else 1)"; then
        die "torch sees no CUDA GPU ($("$PY" -c 'import torch; print("torch", torch.__version__, "CUDA build", torch.version.cuda)')); install a CUDA build of torch (nothing was run)"
    fi
    MACHINE=$(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader | head -n 1)
fi
VERSIONS=$("$PY" -c 'import torch, lostmid; print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, lostmid {lostmid.__version__}")' 2>/dev/null || echo "versions unknown")
echo "gpu_check: $(date -u +%Y-%m-%dT%H:%MZ) on $MACHINE; $VERSIONS; logs in $LOG"

now() { date +%s.%N; }
since() { "$PY" -c "import sys; print(f'{float(sys.argv[2]) - float(sys.argv[1]):.1f}')" "$1" "$(now)"; }
row() { printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "$4" >>"$ROWS"; }
status_of() { # exit code -> status word (124: stopped by timeout)
    case $1 in 0) echo ok ;; 124) echo TIMEOUT ;; *) echo "FAIL($1)" ;; esac
}

# -- 1. device-marked tests -----------------------------------------------------------
start=$(now)
"$PY" -m pytest -m device -p no:cacheprovider -rs >"$LOG/pytest_device.log" 2>&1
rc=$?
counts=$(grep -oE '[0-9]+ (passed|failed|skipped|deselected|errors?)' "$LOG/pytest_device.log" | paste -sd, -)
row "pytest -m device" "$(status_of $rc)" "$(since "$start")" "${counts:-see pytest_device.log}"

# -- 2. measure at L = 2048, float32 vs bfloat16 ---------------------------------------
# gpt2's own position table holds 1024 positions: its shape with a LENGTH-entry table is
# written as a local model directory (architecture only; weights are random as always).
GPT2_LONG="$LOG/$GPT2-$LENGTH"
"$PY" - "$GPT2" "$LENGTH" "$GPT2_LONG" <<'EOF' || die "could not write the $GPT2_LONG config"
import json, sys
from importlib import resources
from pathlib import Path

preset, length, folder = sys.argv[1], int(sys.argv[2]), Path(sys.argv[3])
text = resources.files("lostmid.models").joinpath(f"presets/{preset}.json").read_text()
config = json.loads(text)
config.pop("_comment", None)
config["n_positions"] = max(length, config["n_positions"])
folder.mkdir(parents=True, exist_ok=True)
(folder / "config.json").write_text(json.dumps(config, indent=1))
EOF
for model in "$QWEN" "$GPT2"; do
    spec=$model
    [ "$model" = "$GPT2" ] && spec=$GPT2_LONG
    for dtype in float32 bfloat16; do
        start=$(now)
        "$PY" -m lostmid.cli measure --model "$spec" --length "$LENGTH" --samples "$SAMPLES" \
            --probes "$PROBES" --device "$DEVICE" --dtype "$dtype" --seed 0 --overwrite \
            --out "$LOG/measure/$model-$dtype" >"$LOG/measure-$model-$dtype.log" 2>&1
        rc=$?
        row "measure $model L=$LENGTH $dtype" "$(status_of $rc)" "$(since "$start")" \
            "samples $SAMPLES x probes $PROBES"
    done
    # agreement of the two dtypes (same weights, inputs and probes: only precision differs)
    detail=$("$PY" - "$LOG/measure/$model-float32/measure.json" \
        "$LOG/measure/$model-bfloat16/measure.json" 2>&1 <<'EOF'
import json, sys
import numpy as np
from lostmid.compare.metrics import wasserstein1

f32, bf16 = (json.load(open(path)) for path in sys.argv[1:3])
a, b = np.asarray(f32["influence"], float), np.asarray(bf16["influence"], float)
rel = np.abs(b - a) / np.abs(a)
print(
    f"W1 {wasserstein1(a, b):.3g}, max rel diff {np.nanmax(rel):.3g} "
    f"(at j = {int(np.nanargmax(rel)) + 1}), median {np.nanmedian(rel):.3g}; "
    f"fp32 max rel s.e. {f32['max_relative_stderr']:.3g}"
)
EOF
    )
    rc=$?
    row "agreement $model fp32 vs bf16" "$(status_of $rc)" "-" "$(echo "$detail" | tail -n 1)"
done

# -- 3. reproduce --full ---------------------------------------------------------------
if [ "$REPRO_TIMEOUT" -gt 0 ]; then
    start=$(now)
    timeout "$REPRO_TIMEOUT" "$PY" -m lostmid.cli reproduce "${REPRO[@]}" \
        --models "$QWEN,$GPT2_LONG" --device "$DEVICE" --out "$LOG/reproduce" \
        >"$LOG/reproduce.log" 2>&1
    rc=$?
    stages=$(find "$LOG/reproduce/stages" -name '*.json' 2>/dev/null | wc -l)
    row "reproduce ${REPRO[*]} (limit ${REPRO_TIMEOUT}s)" "$(status_of $rc)" "$(since "$start")" \
        "$stages stages saved; $(grep -oE '[0-9]+ stages computed, [0-9]+ reused, [0-9.]+ s' "$LOG/reproduce.log" | tail -n 1)"
fi

# -- the table --------------------------------------------------------------------------
{
    echo "gpu_check $(date -u +%Y-%m-%d) on $MACHINE; $VERSIONS"
    printf '%-46s %-10s %8s  %s\n' step status seconds detail
    while IFS=$'\t' read -r step status seconds detail; do
        printf '%-46s %-10s %8s  %s\n' "$step" "$status" "$seconds" "$detail"
    done <"$ROWS"
} | tee "$LOG/summary.txt"
# exit 1 when a step failed; a TIMEOUT of reproduce is not a failure (it resumes)
awk -F'\t' '$2 ~ /^FAIL/ { failed = 1 } END { exit failed }' "$ROWS"
