#!/usr/bin/env bash
# The device checks in one run (a lent GPU machine: JAX with CUDA, no dp-accounting):
#   1. the tests that exercise exactness (TF32 would break them), then the rest of the suite;
#   2. benchmarks/gpu.py's table.
# Wheels missing on the machine travel in .whl/ (see the device tool's README). Usage, from
# the repository root, with OUT set to a folder for the logs:
#   OUT=/tmp/out bash benchmarks/gpu_checks.sh [SUITE_SECONDS] [BENCH_SECONDS]
set -uo pipefail
OUT=${OUT:-/tmp/gpu_checks}
mkdir -p "$OUT"
if compgen -G ".whl/*.whl" > /dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD
else
  export PYTHONPATH=$PWD
fi
# No JAX_DEFAULT_MATMUL_PRECISION: the library must be exact under the backend's defaults.
unset JAX_DEFAULT_MATMUL_PRECISION
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
nvidia-smi -L 2>/dev/null | tee "$OUT/device.txt"
python3 -c "import jax; print(jax.__version__, jax.devices())" | tee -a "$OUT/device.txt"
SUITE=${1:-300}
BENCH=${2:-150}
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n 6"
EXACT="tests/test_precision.py tests/test_sets.py tests/test_robust.py tests/test_api.py \
  tests/test_bounds.py tests/test_support.py tests/test_validity.py tests/test_beta.py"
timeout "$SUITE" python3 -m pytest -q -p no:cacheprovider $XDIST $EXACT 2>&1 \
  | tee "$OUT/exactness_tests.log" | tail -25
timeout "$BENCH" python3 benchmarks/gpu.py --budget-s $((BENCH - 30)) --json "$OUT/gpu.json" \
  2>"$OUT/gpu_progress.log" | tee "$OUT/gpu.md"
