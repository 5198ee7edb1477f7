#!/usr/bin/env bash
# Make .venv-ft: a virtual environment on the free-threaded interpreter (scripts/python_ft.sh) with what
# has cp313t wheels or builds quickly, and the project's Cython extensions compiled for it.
#
# Why a separate venv: the default .venv (make install) is the GIL interpreter the whole suite and CI run on;
# this one exists only for `make test-ft` and `make bench-ft`, whose measuring children run here (the harness
# parent and the report stay on .venv). Installed here: numpy, scipy, pandas<3.1 (3.1 has no cp313t wheel: a
# long source build), psutil, Cython, gymnasium, hydra-core, pettingzoo, pytest, tqdm (antlr4-python3-runtime
# and PyYAML build from source in seconds). Not installed: matplotlib (only the report draws, on .venv; its
# contourpy dependency builds from C++ source for cp313t here, many minutes on 2 cores),
# ray (no cp313t wheel; the harness skips it under ft with the reason in the row). ale-py (FT_ALE=0 skips it):
# no cp313t wheel either, so it is built here from its sdist (ale_py-FT_ALE_VERSION.tar.gz, 11.5 MB, with the
# ROMs; ~10 min on 2 cores): only ale-py from source, its build requirements as binary wheels
# (scikit-build-core, nanobind, cmake, ninja), without build isolation (its pyproject also asks for jax, for
# the XLA vector interface, which is turned off here with the SDL display and the OpenCV vector interface:
# CMAKE_ARGS), zlib's headers from the distribution (Debian: zlib1g-dev). Its module is declared free-threading
# safe upstream (nanobind_add_module(... FREE_THREADED ...): Py_MOD_GIL_NOT_USED; each ALEInterface owns its
# emulator state), which the check at the end verifies (the GIL stays off after importing it). torch: a
# CPU-only cp313t wheel from FT_TORCH_INDEX (default the PyTorch CPU index) where that index is reachable;
# FT_TORCH=pypi takes PyPI's Linux cp313t wheel instead, which is the CUDA build (torch 2.12: ~510 MB plus
# ~3 GB of nvidia-* and triton packages; it runs on the CPU like any other) and the only one this machine can
# reach; FT_TORCH=0 skips torch (dqn and marl, whose policies are torch models, are then skipped under ft).
set -euo pipefail

FT_PY=${FT_PY:-$PWD/.python-ft/bin/python3}
VENV=${VENV_FT:-$PWD/.venv-ft}
TORCH_SPEC=${FT_TORCH_SPEC:-torch==2.12.*}
TORCH_INDEX=${FT_TORCH_INDEX:-https://download.pytorch.org/whl/cpu}

say() { printf 'install-ft: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

[[ -x "$FT_PY" ]] || die "no free-threaded interpreter at $FT_PY: run \`make python-ft\` first (or PYTHON_FT=/path/to/python3.13t make python-ft)"
"$FT_PY" -c 'import sysconfig, sys; sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") else 1)' \
    || die "$FT_PY is not a free-threaded build"

say "creating $VENV on $("$FT_PY" -c 'import sys; print(sys.version.split()[0] + "t")') and installing, from the package index:"
say "  numpy scipy 'pandas<3.1' psutil Cython gymnasium hydra-core pettingzoo pytest pytest-timeout tqdm"
say "  (binary cp313t wheels where they exist, ~150 MB; pure-Python and small source builds otherwise)"
[[ -x "$VENV/bin/python" ]] || "$FT_PY" -m venv "$VENV"
PY=$VENV/bin/python
"$PY" -m pip install -q --upgrade pip setuptools wheel
# binary-only for the compiled packages: a missing cp313t wheel fails here, clearly, instead of a long build
"$PY" -m pip install -q --only-binary=numpy,scipy,pandas,psutil \
    "numpy>=1.26" scipy "pandas<3.1" psutil "Cython>=3.0" \
    || die "a compiled dependency has no cp313t wheel for this machine (see pip's message above)"
"$PY" -m pip install -q gymnasium hydra-core pettingzoo pytest pytest-timeout tqdm \
    || die "installing the pure-Python dependencies failed (see pip's message above)"

if "$PY" -c 'import torch' 2>/dev/null; then
    say "torch already installed: $("$PY" -c 'import torch; print(torch.__version__)')"
elif [[ "${FT_TORCH:-1}" == 0 ]]; then
    say "skipping torch (FT_TORCH=0): dqn and marl (torch policies) are skipped under ft"
elif [[ "${FT_TORCH:-1}" == pypi ]]; then
    say "installing $TORCH_SPEC from the package index (FT_TORCH=pypi): the CUDA build, ~510 MB plus ~3 GB of"
    say "nvidia-* and triton packages (the CPU runs it)"
    "$PY" -m pip install -q "$TORCH_SPEC" || die "installing $TORCH_SPEC for cp313t from the package index failed"
else
    say "trying a CPU-only $TORCH_SPEC cp313t wheel from $TORCH_INDEX (~200 MB; skipped when unreachable)"
    if ! timeout 600 "$PY" -m pip install -q --index-url "$TORCH_INDEX" "$TORCH_SPEC"; then
        say "no CPU-only torch for cp313t could be had from $TORCH_INDEX: skipping torch. FT_TORCH=pypi installs"
        say "PyPI's CUDA build instead (~3.5 GB); without torch dqn and marl are skipped under ft"
    fi
fi
# triton (a GPU kernel compiler that comes with PyPI's CUDA torch) declares no free-threading support, and torch
# imports it whenever torch._dynamo loads (an optimizer's construction does): the interpreter then turns the GIL
# back on for the rest of the process. Torch runs without it on the CPU, so it goes.
if "$PY" -m pip show -q triton >/dev/null 2>&1; then
    say "removing triton: importing it re-enables the GIL, and torch needs it only to compile GPU kernels"
    "$PY" -m pip uninstall -y -q triton
fi

ALE_VERSION=${FT_ALE_VERSION:-0.12.1}
if "$PY" -c 'import ale_py' 2>/dev/null; then
    say "ale-py already installed: $("$PY" -c 'import ale_py; print(ale_py.__version__)')"
elif [[ "${FT_ALE:-1}" == 0 ]]; then
    say "skipping ale-py (FT_ALE=0): atari is skipped under ft"
else
    CXX_BIN=${CXX:-c++}
    command -v "$CXX_BIN" >/dev/null || die "ale-py: no C++ compiler ($CXX_BIN) to build it with (Debian: apt-get install g++), or FT_ALE=0"
    echo '#include <zlib.h>' | "$CXX_BIN" -E -x c++ - >/dev/null 2>&1 \
        || die "ale-py: zlib's headers are missing (Debian: apt-get install zlib1g-dev), or FT_ALE=0 to skip ale-py"
    say "building ale-py $ALE_VERSION for $("$PY" -c 'import sys; print(sys.implementation.cache_tag)') from its sdist (~10 min on 2 cores;"
    say "  build requirements as binary wheels: scikit-build-core nanobind cmake ninja; SDL, vector and XLA off)"
    "$PY" -m pip install -q --only-binary :all: "scikit-build-core>=0.10" "nanobind>=2.5" cmake ninja \
        || die "ale-py: installing its build requirements (binary wheels) failed"
    CMAKE_ARGS="-DSDL_SUPPORT=OFF -DBUILD_VECTOR_LIB=OFF -DBUILD_VECTOR_XLA_LIB=OFF" \
    CMAKE_BUILD_PARALLEL_LEVEL=${FT_JOBS:-$(nproc 2>/dev/null || echo 2)} \
        "$PY" -m pip install -q --no-build-isolation --no-deps --no-binary ale-py "ale-py==$ALE_VERSION" \
        || die "ale-py: building ale-py $ALE_VERSION from its sdist failed (see above), or FT_ALE=0 to skip it"
    "$PY" -c 'import sys, ale_py, ale_py.roms as r; assert r.get_rom_path("pong"), "no Pong ROM"; sys.exit(1 if sys._is_gil_enabled() else 0)' \
        || die "ale-py: built, but importing it re-enables the GIL or it has no ROMs"
fi

say "compiling the project's Cython extensions for $("$PY" -c 'import sys; print(sys.implementation.cache_tag)')"
"$PY" -m pip install -q --no-build-isolation --no-deps -e . \
    || die "building the project's extensions for the free-threaded interpreter failed"
"$PY" - <<'EOF'
import sys
import reactor_backend, reactor_backend._core, reactor_backend._sync, reactor_backend._codec  # noqa: F401
import harness.runner, scenarios._checksum, scenarios.gym  # noqa: F401
what = "the runtime and harness"
try:
    import ale_py, scenarios.atari  # noqa: F401
    what += ", ale-py"
except ImportError:
    pass
try:
    import torch._dynamo  # noqa: F401  (what an optimizer's construction loads: it probes triton)
    what += " and torch"
except ImportError:
    pass
print("install-ft: ok:", sys.version.split()[0], f"GIL enabled after importing {what}:",
      sys._is_gil_enabled(), file=sys.stderr)
sys.exit(1 if sys._is_gil_enabled() else 0)
EOF
