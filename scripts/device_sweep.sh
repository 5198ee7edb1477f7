#!/usr/bin/env bash
# The scaling sweep for a bigger machine (workers 1, 2, 4, 8, 16; Gym and Atari; reactor and Ray), as run on
# a lent 16-core machine that has no network: Python wheels are carried in WHEELS, installed with --no-index.
# Results land in OUT_DIR (one folder per scenario), then a tarball for the trip back.
#   WHEELS=.device/wheels OUT_DIR=results/reference/h200 bash scripts/device_sweep.sh
set -uo pipefail
WHEELS=${WHEELS:-.device/wheels}
OUT_DIR=${OUT_DIR:-results/reference/sweep}
PY=${PY:-python3}
ROUNDS_GYM=${ROUNDS_GYM:-500}
ROUNDS_ATARI=${ROUNDS_ATARI:-150}
export RAY_USAGE_STATS_ENABLED=0 PYTHONUNBUFFERED=1

if [ -d "$WHEELS" ]; then
  $PY -m pip install -q --no-index --find-links "$WHEELS" ray gymnasium ale-py hydra-core omegaconf 2>&1 | tail -3
fi
$PY -m pip install -q --no-deps --no-build-isolation -e . 2>&1 | tail -3
$PY - <<'PY'
import os, ray, gymnasium, ale_py, torch, numpy
print("cores", os.cpu_count(), "ray", ray.__version__, "gymnasium", gymnasium.__version__, "ale", ale_py.__version__,
      "torch", torch.__version__, "numpy", numpy.__version__)
PY

common=(budget=local budget.repetitions=5 budget.warmup_rounds=10 budget.timeout_s=150 quiet=true scenario.num_envs=16)
sweep() {  # scenario rounds backends workers
  $PY -m harness -m "scenario=$1" "backend=$3" "workers=$4" "budget.rounds=$2" "${common[@]}" \
      "hydra.sweep.dir=$OUT_DIR/$1/$5" 2>&1 | grep -E "ok,|error|timeout" || true
}
for scenario in gym atari; do
  rounds=$ROUNDS_GYM; [ "$scenario" = atari ] && rounds=$ROUNDS_ATARI
  sweep $scenario $rounds serial 1 serial
  sweep $scenario $rounds reactor,ray,ray_compiled 1,2,4,8,16 scaling
done
$PY -m harness.report "$OUT_DIR" --out "$OUT_DIR/report" 2>&1 | tail -5 || true
# one file for the trip back (a lent machine returns at most 8 files, 2 folders deep)
if [ -n "${TARBALL:-}" ]; then tar czf "$TARBALL" -C "$(dirname "$OUT_DIR")" "$(basename "$OUT_DIR")"; fi
