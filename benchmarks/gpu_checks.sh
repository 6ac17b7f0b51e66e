#!/usr/bin/env bash
# The device checks (a lent GPU machine: JAX with CUDA, no dp-accounting or numba/llvmlite:
# carry their wheels), as named steps, each
# under its own time limit in seconds, so a lease's minutes can be split between calls:
#   exact     the tests that exercise exactness (TF32 would break them);
#   bench     benchmarks/gpu.py's table (its --budget-s is the limit less 30 s);
#   chunking  benchmarks/bench_chunking.py: Example 2 (9 k x 20,000 runs) and the 100x100
#             support-aware gridworld (9 k x 100 runs), the default against wider and narrower
#             groups;
#   rest      the rest of the test suite (every file the exact step leaves out);
#   slow      the tests marked slow (CI's second pass);
#   float64   CI's third pass: the numerical core's files with JAX_ENABLE_X64=1;
#   interval  benchmarks/bench_interval.py: the interval backup beside the point backup (10⁴ to
#             10⁶ states) and an interval MDP's Pmaxmin check, the device named in its JSON.
# Wheels missing on the machine travel in .whl/ (see the device tool's README). Usage, from
# the repository root, with OUT set to a folder for the logs:
#   OUT=/tmp/out bash benchmarks/gpu_checks.sh [STEP:SECONDS ...]   (default: exact:300 bench:150)
# Every step is checked before anything runs (exit 2 on a bad one); the script exits with the
# last failing step's status (124: its time limit stopped it), 0 when all succeed.
set -uo pipefail
[ $# -eq 0 ] && set -- exact:300 bench:150
for step in "$@"; do  # checked before anything runs: a typo must not cost a lease's minutes
  if ! [[ $step =~ ^(exact|rest|slow|float64|bench|chunking|interval):[1-9][0-9]*$ ]] \
    || { [[ $step == bench:* ]] && (( ${step#*:} <= 30 )); } \
    || { [[ $step == chunking:* ]] && (( ${step#*:} < 3 )); }; then
    echo "bad step '$step': want NAME:SECONDS, NAME one of exact rest slow float64 bench chunking interval" \
      "(bench over 30 s, chunking at least 3 s)" >&2
    exit 2
  fi
done
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
nvidia-smi -L 2>/dev/null | tee -a "$OUT/device.txt"
python3 -c "import jax; print(jax.__version__, jax.devices())" | tee -a "$OUT/device.txt"
XDIST=""
python3 -c "import xdist" 2>/dev/null && XDIST="-n 8"
EXACT="tests/test_precision.py tests/test_sets.py tests/test_robust.py tests/test_api.py \
  tests/test_bounds.py tests/test_support.py tests/test_validity.py tests/test_beta.py"
FLOAT64=$(cat tests/float64_files.txt)  # the files of .ci/run's float64 pass
REST=$(ls tests/test_*.py | grep -v -x -F -f <(tr -s ' ' '\n' <<< "$EXACT"))
rc=0
for step in "$@"; do
  name=${step%%:*}
  limit=${step##*:}
  echo "== $name (limit ${limit} s) $(date -u +%T)"
  case $name in
    exact)
      timeout "$limit" python3 -m pytest -q -p no:cacheprovider $XDIST $EXACT 2>&1 \
        | tee "$OUT/exactness_tests.log" | tail -25 ;;
    rest)
      timeout "$limit" python3 -m pytest -q -p no:cacheprovider $XDIST $REST 2>&1 \
        | tee "$OUT/rest_tests.log" | tail -40 ;;
    slow)
      timeout "$limit" python3 -m pytest -q -p no:cacheprovider $XDIST -m slow 2>&1 \
        | tee "$OUT/slow_tests.log" | tail -40 ;;
    float64)
      JAX_ENABLE_X64=1 JAXPRIVMDP_TEST_FULL_OPT=1 timeout "$limit" python3 -m pytest -q \
        -p no:cacheprovider $XDIST -m "not slow" $FLOAT64 2>&1 \
        | tee "$OUT/float64_tests.log" | tail -40 ;;
    bench)
      timeout "$limit" python3 benchmarks/gpu.py --budget-s $((limit - 30)) \
        --json "$OUT/gpu.json" 2>"$OUT/gpu_progress.log" | tee "$OUT/gpu.md" ;;
    chunking)
      third=$((limit / 3))  # Example 2 compiles less than the gridworld
      timeout "$third" python3 benchmarks/bench_chunking.py --cases example2 --repeats 2 \
        --widths 256,1024,4096 --batches 16384,65536 2>>"$OUT/chunking_progress.log" \
        | tee "$OUT/chunking.md" \
      && timeout $((limit - third)) python3 benchmarks/bench_chunking.py --cases grid \
        --repeats 2 --widths 16,64,256,1024 --batches 1024 2>>"$OUT/chunking_progress.log" \
        | tee -a "$OUT/chunking.md" ;;
    interval)
      timeout "$limit" python3 benchmarks/bench_interval.py --out "$OUT/bench_interval.json" \
        2>&1 | tee "$OUT/interval.log" | tail -30 ;;
  esac
  status=$?  # the step's command (pipefail), 124 when its limit stopped it
  [ $status -eq 124 ] && echo "== $name TIMED OUT after ${limit} s"
  [ $status -ne 0 ] && echo "== $name exited $status" && rc=$status
done
exit $rc
