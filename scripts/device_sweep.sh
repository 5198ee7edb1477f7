#!/usr/bin/env bash
# The many-core reading, for a lent machine without network (issue 40; docs/harness.md, "The device kit").
#
# On that machine (the repository root of a copy of this tree, `make device-kit`'s .device/ carried along):
#   bash scripts/device_sweep.sh                 # installs the kit, builds the extension, measures, one tarball
# Here, the same path shortened (workers 1 and 2, seconds per job) on .venv, without installing anything:
#   bash scripts/device_sweep.sh --local
#   bash scripts/device_sweep.sh --dry-run [--local]   # prints every step and job, runs nothing
# The free-threaded reading (issue 46: the threads executor on 3.13t against processes, the paper's own setup), a
# second call after the first, with `make device-kit-ft`'s .device/ft carried too:
#   bash scripts/device_sweep.sh --ft [--local]  # unpacks its 3.13t, makes its venv, builds the extension there,
#                                                # then paired jobs of FT_BACKENDS at FT_WORKERS (default 16 8)
#
# What it runs, within BUDGET_S seconds of wall time from its start (default 510: the device's 600 s per command
# less a margin), in the order of WORKERS (default 16 1 4 8 2: the widest first):
#   * paired jobs (python -m harness compare): serial, reactor and capacity_lockstep alternating in one job, on
#     gym, atari, marl (synthetic) and dqn at each worker count, each ended after PAIRED_SECONDS of cycles;
#   * standalone jobs (python -m harness -m): the reactor, PufferLib's Multiprocessing (puffer) and ale-py's
#     AtariVectorEnv (ale_vector, atari) at each worker count; serial and gymnasium's AsyncVectorEnv
#     (vector: one process per env whatever `workers` says) at the widest count only. Ray is not carried (its
#     wheel alone is over what may travel).
# A job starts only while the budget leaves room for it, the report and the tarball (a job that would not fit is
# listed as skipped in the log); every job runs under `timeout`. Results land in OUT_DIR, then
# $TARBALL (default $OUT/device.tar.gz on the device, results/device/<name>.tar.gz here) holds OUT_DIR, and
# $OUT also gets report.md, machine.txt and sweep.log for a first look.
set -uo pipefail
cd "$(dirname "$0")/.."

LOCAL=0 DRY=0 FT=0
for arg in "$@"; do
  case "$arg" in
    --local) LOCAL=1 ;;
    --dry-run) DRY=1 ;;
    --ft) FT=1 ;;
    -h|--help) sed -n '2,29p' "$0"; exit 0 ;;
    *) echo "device_sweep.sh: unknown argument $arg (known: --local, --dry-run, --ft, --help)" >&2; exit 2 ;;
  esac
done

STAMP=$(date -u +%Y-%m-%d_%H-%M-%S)
if [ "$LOCAL" = 1 ]; then
  PY=${PY:-.venv/bin/python}
  INSTALL=${INSTALL:-0}
  WORKERS=${WORKERS:-"1 2"}
  BUDGET_S=${BUDGET_S:-540}
  PAIRED_SECONDS=${PAIRED_SECONDS:-3}
  MIN_CYCLES=${MIN_CYCLES:-6}
  REPS=${REPS:-2}
  ROUNDS_GYM=${ROUNDS_GYM:-200} ROUNDS_ATARI=${ROUNDS_ATARI:-30}
  NICE=${NICE:-"nice -n 10"}
  FT_WORKERS=${FT_WORKERS:-2}
  OUT_DIR=${OUT_DIR:-results/device/local-$STAMP}
  TARBALL=${TARBALL:-results/device/local-$STAMP.tar.gz}
else
  PY=${PY:-python3}
  INSTALL=${INSTALL:-1}
  WORKERS=${WORKERS:-"16 4 8"}
  BUDGET_S=${BUDGET_S:-510}
  PAIRED_SECONDS=${PAIRED_SECONDS:-6}
  MIN_CYCLES=${MIN_CYCLES:-20}  # per paired job, whatever PAIRED_SECONDS says: the cells' intervals need them
  REPS=${REPS:-3}
  ROUNDS_GYM=${ROUNDS_GYM:-600} ROUNDS_ATARI=${ROUNDS_ATARI:-100}
  NICE=${NICE:-}
  FT_WORKERS=${FT_WORKERS:-"16 8"}
  OUT_DIR=${OUT_DIR:-results/device/$STAMP}
  if [ -n "${OUT:-}" ]; then TARBALL=${TARBALL:-$OUT/device.tar.gz}; else TARBALL=${TARBALL:-results/device/$STAMP.tar.gz}; fi
fi
WHEELS=${WHEELS:-.device/wheels}
FT_KIT=${FT_KIT:-.device/ft}  # make device-kit-ft: python-ft.tar.xz and wheels/; its interpreter and venv go here too
FT_PY=$FT_KIT/venv/bin/python
# the free-threaded reading's residents: processes on the machine's Python first, threads on 3.13t second (the
# job's main ratio: threads ft / processes), serial on both (what the interpreter itself costs) and the ceiling on
# both (each executor's share of its own interpreter's ceiling: `harness.report --predict` reads both subjects)
FT_BACKENDS=${FT_BACKENDS:-"reactor,reactor_threads@ft,serial,serial@ft,capacity_lockstep,capacity_lockstep@ft"}
if [ "$FT" = 1 ]; then
  WORKERS=$FT_WORKERS
  OUT_DIR=${OUT_DIR%/*}/ft-${OUT_DIR##*/}
  TARBALL=${TARBALL%/*}/ft-${TARBALL##*/}
fi
NUM_ENVS=${NUM_ENVS:-16}    # gym and atari envs, marl agents: a multiple of every worker count (PufferLib needs it)
RESERVE_S=${RESERVE_S:-45}  # kept for the report and the tarball
export PYTHONUNBUFFERED=1
START=$SECONDS
LOG=$OUT_DIR/sweep.log
WIDEST=$(for w in $WORKERS; do echo "$w"; done | sort -n | tail -1)

run() {  # run a step (or print it under --dry-run), logging it
  echo "+ $*" | tee -a "$LOG"
  [ "$DRY" = 1 ] && return 0
  "$@" 2>&1 | tee -a "$LOG" | { grep -E "ok,|error|timeout|Error|refused|stopped by|compare .*:" || true; }
  local rc=${PIPESTATUS[0]}
  return "$rc"
}

job() {  # job ESTIMATE_S LIMIT_S CMD...: runs CMD under `timeout LIMIT_S` when the budget leaves room for ESTIMATE_S
  local estimate=$1 limit=$2; shift 2
  local left=$((BUDGET_S - RESERVE_S - (SECONDS - START)))
  if [ "$DRY" = 0 ] && [ "$left" -lt "$estimate" ]; then
    echo "skipped (${left}s left of the budget, about ${estimate}s needed): $*" | tee -a "$LOG"
    SKIPPED=$((SKIPPED + 1))
    return 0
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  [ "$limit" -lt 5 ] && limit=5
  # SIGINT first: the harness then kills its measuring child's tree and cleans up as on Ctrl-C
  local t0=$SECONDS
  run timeout -s INT -k 10 "$limit" $NICE "$@" || { echo "failed (exit $?): $*" | tee -a "$LOG"; FAILED=$((FAILED + 1)); }
  [ "$DRY" = 1 ] || echo "  ($((SECONDS - t0))s; $((SECONDS - START))s of ${BUDGET_S}s used)" | tee -a "$LOG"
}

if [ "$DRY" = 1 ]; then LOG=/dev/null; else mkdir -p "$OUT_DIR"; : > "$LOG"; fi
SKIPPED=0 FAILED=0

# ---- 1. the wheels and the extension (device only)
if [ "$INSTALL" = 1 ]; then
  test -d "$WHEELS" || [ "$DRY" = 1 ] || { echo "no $WHEELS: run make device-kit here and carry .device" | tee -a "$LOG"; exit 2; }
  run "$PY" -m pip install -q --no-index --find-links "$WHEELS" gymnasium ale-py hydra-core omegaconf \
      antlr4-python3-runtime pettingzoo farama-notifications cloudpickle typing-extensions pyyaml packaging || exit 1
  # pufferlib-core pins torch==2.9.0; its vectorizer needs only numpy, gymnasium and psutil: the torch there stays
  run "$PY" -m pip install -q --no-index --no-deps --find-links "$WHEELS" pufferlib-core || exit 1
  # the extension needs the interpreter's C headers: say so at once where they are missing (a Python without its -dev files)
  if [ "$DRY" = 0 ] && ! "$PY" -c 'import os, sys, sysconfig; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'; then
    echo "no Python.h for $PY ($("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')): the extension cannot be built here" | tee -a "$LOG"
    exit 3
  fi
  # the extension, compiled in place on every core; then the checkout on sys.path through a .pth file, which is what
  # `pip install --no-deps --no-build-isolation -e .` amounts to, without its second, serial compile (40 s of CPU)
  run "$PY" setup.py -q build_ext --inplace -j "$(nproc)" || exit 1
  run "$PY" -c 'import os, site; open(os.path.join(site.getsitepackages()[0], "reactorbench-device.pth"), "w").write(os.getcwd() + "\n")' || exit 1
  run "$PY" -c 'import reactor_backend._core, scenarios._checksum, harness, pufferlib.vector, ale_py, hydra' || exit 1
fi

# ---- 1b. the free-threaded interpreter (--ft, here too: the kit's own path, unpacked where it was not built)
if [ "$FT" = 1 ]; then
  test -f "$FT_KIT/python-ft.tar.xz" || [ "$DRY" = 1 ] || { echo "no $FT_KIT/python-ft.tar.xz: run make device-kit-ft here and carry .device" | tee -a "$LOG"; exit 2; }
  if [ "$DRY" = 1 ] || [ ! -x "$FT_KIT/python-ft/bin/python3" ]; then run tar xJf "$FT_KIT/python-ft.tar.xz" -C "$FT_KIT" || exit 1; fi
  if [ "$DRY" = 1 ] || [ ! -x "$FT_PY" ]; then run "$FT_KIT/python-ft/bin/python3" -m venv "$FT_KIT/venv" || exit 1; fi
  run "$FT_PY" -m pip install -q --no-index --find-links "$FT_KIT/wheels" numpy psutil pyyaml ale-py gymnasium \
      cloudpickle farama-notifications typing-extensions hydra-core omegaconf antlr4-python3-runtime packaging cython \
      setuptools || exit 1
  # the extension for 3.13t beside the machine's (another file name: *.cpython-313t-*.so), the checkout on its path;
  # its C generated again by the kit's Cython (the machine's may predate free-threading support, and C it generated
  # would turn the GIL back on when imported)
  run find reactor_backend scenarios -name '*.pyx' -exec touch {} + || exit 1
  run "$FT_PY" setup.py -q build_ext --inplace -j "$(nproc)" || exit 1
  run "$FT_PY" -c 'import os, site; open(os.path.join(site.getsitepackages()[0], "reactorbench-device.pth"), "w").write(os.getcwd() + "\n")' || exit 1
  run "$FT_PY" -c 'import sys, reactor_backend._core, scenarios._checksum, harness.compare_child, gymnasium, ale_py; sys.exit(sys._is_gil_enabled())' || { echo "the free-threaded venv imports with the GIL on, or not at all" | tee -a "$LOG"; exit 1; }
  export REACTORBENCH_FT_PYTHON=$PWD/$FT_PY
fi

# ---- 2. the machine
if [ "$DRY" = 0 ]; then
  {
    echo "date $(date -u +%FT%TZ)"
    echo "nproc $(nproc)"
    lscpu | grep -E '^(Model name|Socket|Core|Thread|CPU\(s\)|NUMA node\(s\))' || true
    free -g | head -2
    "$PY" - <<'PY'
import importlib.metadata as md, os, platform, sys
import psutil
print("python", sys.version.split()[0], sys.executable)
print("affinity", len(os.sched_getaffinity(0)), "physical_cores", psutil.cpu_count(logical=False),
      "logical_cores", psutil.cpu_count())
for name in ("torch", "numpy", "gymnasium", "ale-py", "hydra-core", "pufferlib-core", "pettingzoo", "Cython"):
    try:
        print(name, md.version(name))
    except md.PackageNotFoundError:
        print(name, "missing")
PY
    if [ "$FT" = 1 ]; then "$FT_PY" -c 'import sys; print("ft python", sys.version.split()[0] + "t", sys.executable, "GIL enabled:", sys._is_gil_enabled())'; fi
  } > "$OUT_DIR/machine.txt" 2>&1
  cat "$OUT_DIR/machine.txt" | tee -a "$LOG"
  PHYSICAL=$("$PY" -c 'import psutil; print(psutil.cpu_count(logical=False) or 1)')
else
  PHYSICAL=$(nproc)
fi

# ---- 3. the jobs
common=(quiet=true seed=0)
paired() {  # scenario workers [overrides...]
  local scenario=$1 w=$2; shift 2
  job $((PAIRED_SECONDS + 12)) $((PAIRED_SECONDS + 90)) "$PY" -m harness compare "scenario=$scenario" \
    "backends=[${BACKENDS:-serial,reactor,capacity_lockstep}]" "workers=$w" budget=local "compare.max_seconds=$PAIRED_SECONDS" \
    "compare.min_cycles=$MIN_CYCLES" compare.respawn_s=0 "${common[@]}" "$@" \
    "hydra.run.dir=$OUT_DIR/paired/${scenario}/w$w${TAG:-}"
}  # one set of processes per job: a respawn of 16-process residents costs seconds the budget has not got, and the
   # readings here are shares and breakdowns, not 1% effects
standalone() {  # scenario workers backends rounds estimate [overrides...]
  local scenario=$1 w=$2 backends=$3 rounds=$4 estimate=$5; shift 5
  job "$estimate" $((estimate * 4 + 60)) "$PY" -m harness -m "scenario=$scenario" "backend=$backends" "workers=$w" \
    budget=local "budget.rounds=$rounds" "budget.repetitions=$REPS" budget.warmup_rounds=10 budget.timeout_s=120 \
    "${common[@]}" "$@" "hydra.sweep.dir=$OUT_DIR/standalone/${scenario}/w$w"
}
if [ "$FT" = 1 ]; then
  for w in $WORKERS; do
    BACKENDS=$FT_BACKENDS paired gym "$w" "scenario.num_envs=$NUM_ENVS"
    BACKENDS=$FT_BACKENDS paired atari "$w" "scenario.num_envs=$NUM_ENVS"
  done
  WORKERS=""  # nothing more in this call
fi
for w in $WORKERS; do
  puffer=puffer; [ "$w" -gt "$PHYSICAL" ] && puffer=puffer_overwork  # PufferLib's own flag, nothing else changes
  paired gym "$w" "scenario.num_envs=$NUM_ENVS"
  paired atari "$w" "scenario.num_envs=$NUM_ENVS"
  paired marl "$w" scenario.env=synthetic "scenario.num_agents=$NUM_ENVS"
  paired dqn "$w"
  if [ "$w" = "$WIDEST" ]; then  # four envs per worker, as users run vectorized envs
    TAG=-e$((4 * w)) paired gym "$w" "scenario.num_envs=$((4 * w))"
    TAG=-e$((4 * w)) paired atari "$w" "scenario.num_envs=$((4 * w))"
  fi
  gym=reactor,$puffer atari=reactor,$puffer,ale_vector
  [ "$w" = "$WIDEST" ] && gym=serial,$gym,vector atari=serial,$atari,vector
  standalone gym "$w" "$gym" "$ROUNDS_GYM" 20 "scenario.num_envs=$NUM_ENVS"
  standalone atari "$w" "$atari" "$ROUNDS_ATARI" 30 "scenario.num_envs=$NUM_ENVS"
done

# ---- 4. the report and the tarball
if [ "$DRY" = 0 ]; then
  timeout -k 5 120 $NICE "$PY" -m harness.report "$OUT_DIR" --out "$OUT_DIR/report" --no-figures >> "$LOG" 2>&1 \
    || echo "report failed (exit $?): see $LOG" | tee -a "$LOG"
fi
echo "device sweep: $(( SECONDS - START ))s, $FAILED failed, $SKIPPED skipped; results in $OUT_DIR" | tee -a "$LOG"
if [ "$DRY" = 0 ]; then
  mkdir -p "$(dirname "$TARBALL")"
  tar czf "$TARBALL" -C "$(dirname "$OUT_DIR")" "$(basename "$OUT_DIR")"
  echo "tarball: $TARBALL ($(du -h "$TARBALL" | cut -f1))" | tee -a "$LOG"
  if [ -n "${OUT:-}" ] && [ "$LOCAL" = 0 ]; then
    cp "$OUT_DIR/machine.txt" "$LOG" "$OUT/" 2>/dev/null
    cp "$OUT_DIR/report/report.md" "$OUT/" 2>/dev/null || true
  fi
fi
[ "$FAILED" = 0 ]
