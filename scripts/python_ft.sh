#!/usr/bin/env bash
# Provide a free-threaded CPython (3.13t or newer) in a git-ignored folder, reproducibly.
#
# Why: the reactor runtime's threads executor only runs reactions in parallel without the GIL, and no
# Debian release ships a free-threaded interpreter. Order of sources:
#   1. PYTHON_FT=/path/to/python3.13t   one the user already has (uv, pyenv, deadsnakes, conda-forge):
#                                      checked to be free-threaded, then linked as PREFIX/bin/python3.
#   2. PREFIX/bin/python3 already built and free-threaded: nothing to do.
#   3. FT_SOURCE=/path/to/Python-3.x.y.tar.xz   an upstream CPython source archive to build.
#   4. Debian-like machines: the upstream tarball (`.orig.tar.xz`) of the source package FT_DEBIAN_PACKAGE
#      (default python$PYTHON_FT_VERSION, PYTHON_FT_VERSION default 3.13) from FT_DEBIAN_SUITE (default:
#      the first of the release after this machine's, testing and unstable whose source index lists the
#      package), fetched with `apt-get source --download-only` from the mirror this machine's own apt
#      configuration names, through a private apt state (the system's apt configuration is not changed).
#      apt checks the archive against the release's signed index. When the index lists the package but its
#      archive cannot be fetched (PYTHON_FT_VERSION=3.14 here: the mirror answers 404 for its .orig.tar.xz),
#      the script says so and stops before building anything.
# The build is `./configure --disable-gil --prefix=PREFIX` (release -O3; FT_OPTIMIZE=1 adds
# --enable-optimizations --with-lto, i.e. PGO+LTO, several times longer: the Makefile then uses the prefix
# .python-ft-pgo), `make -j`, `make install`. PREFIX/build-info records the source and the options.
set -euo pipefail

PREFIX=${PREFIX:-$PWD/.python-ft}
WORK=${FT_WORK:-$PREFIX.build}
JOBS=${FT_JOBS:-$(nproc 2>/dev/null || echo 2)}
VERSION=${PYTHON_FT_VERSION:-3.13}
[[ "$VERSION" =~ ^3\.[0-9]+$ ]] || { printf 'python-ft: ERROR: PYTHON_FT_VERSION=%s is not of the form 3.N\n' "$VERSION" >&2; exit 1; }
PACKAGE=${FT_DEBIAN_PACKAGE:-python$VERSION}

say() { printf 'python-ft: %s\n' "$*" >&2; }
die() { say "ERROR: $*"; exit 1; }

# is_ft PYTHON: true when PYTHON runs and was built with --disable-gil (Py_GIL_DISABLED).
is_ft() {
    "$1" -c 'import sys, sysconfig; sys.exit(0 if sysconfig.get_config_var("Py_GIL_DISABLED") and sys.version_info >= (3, 13) else 1)' \
        >/dev/null 2>&1
}
# is_version PYTHON: true when PYTHON is the requested 3.N
is_version() { [[ "$("$1" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null)" == "$VERSION" ]]; }

describe() { "$1" -c 'import sys; print(sys.version.replace(chr(10), " "), "| GIL enabled at start:", sys._is_gil_enabled())'; }

if [[ -n "${PYTHON_FT:-}" ]]; then
    exe=$(command -v "$PYTHON_FT" || true)
    [[ -n "$exe" ]] || die "PYTHON_FT=$PYTHON_FT is not an executable"
    is_ft "$exe" || die "PYTHON_FT=$PYTHON_FT is not a free-threaded CPython >= 3.13 (sysconfig Py_GIL_DISABLED unset)"
    mkdir -p "$PREFIX/bin"
    ln -sfn "$(readlink -f "$exe")" "$PREFIX/bin/python3"
    say "using PYTHON_FT: $PREFIX/bin/python3 -> $(readlink -f "$exe")"
    describe "$PREFIX/bin/python3"
    exit 0
fi

if [[ -x "$PREFIX/bin/python3" ]] && is_ft "$PREFIX/bin/python3"; then
    is_version "$PREFIX/bin/python3" || die "$PREFIX/bin/python3 is a free-threaded $("$PREFIX/bin/python3" -c 'import sys; print("%d.%d" % sys.version_info[:2])'), not the requested $VERSION (PYTHON_FT_VERSION): remove $PREFIX or give another PREFIX"
    say "already provided: $PREFIX/bin/python3"
    describe "$PREFIX/bin/python3"
    exit 0
fi

# --- the next Debian release after this machine's (codename), or FT_DEBIAN_SUITE -------------------
next_debian() {
    case "$1" in
        buster) echo bullseye ;; bullseye) echo bookworm ;; bookworm) echo trixie ;;
        trixie) echo forky ;; forky) echo duke ;; *) return 1 ;;
    esac
}

# mirror_for CODENAME: the first URI of an enabled apt entry whose suites include CODENAME exactly.
mirror_for() {
    local codename=$1 f
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
        [[ -r "$f" ]] || continue
        # one-line form: deb [options] URI SUITE COMPONENTS...
        awk -v c="$codename" '$1 ~ /^deb(-src)?$/ {
                i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                if ($(i+1) == c) { print $i; exit } }' "$f"
    done
    for f in /etc/apt/sources.list.d/*.sources; do
        [[ -r "$f" ]] || continue
        # deb822 form: paragraphs with URIs:, Suites:, optional Enabled: no
        awk -v c="$codename" 'function flush() { if (uris != "" && en && found) { split(uris, u, " "); print u[1]; exit }
                                                  uris = ""; en = 1; found = 0 }
            BEGIN { en = 1 }
            /^[[:space:]]*$/ { flush(); next }
            /^#/ { next }
            tolower($1) == "uris:" { uris = $2; for (i = 3; i <= NF; i++) uris = uris " " $i }
            tolower($1) == "suites:" { for (i = 2; i <= NF; i++) if ($i == c) found = 1 }
            tolower($1) == "enabled:" && tolower($2) == "no" { en = 0 }
            END { flush() }' "$f"
    done | head -n 1
}

# keyring_for: the Signed-By keyring of the system's entries, else the distribution's archive keyring.
keyring() {
    local k
    k=$(grep -rhoiE '^[[:space:]]*signed-by:[[:space:]]*[^[:space:]]+' /etc/apt/sources.list.d/*.sources 2>/dev/null \
        | head -n 1 | awk '{print $2}' || true)
    [[ -n "$k" && -r "$k" ]] || k=$(ls /usr/share/keyrings/*-archive-keyring.gpg 2>/dev/null | head -n 1 || true)
    echo "$k"
}

fetch_debian_source() {
    command -v apt-get >/dev/null || die "no PYTHON_FT, no FT_SOURCE, and no apt-get to fetch a CPython source archive: install a free-threaded CPython (uv python install 3.13t, pyenv install 3.13t, deadsnakes python3.13-nogil) and pass PYTHON_FT=/path/to/python3.13t"
    local codename suite mirror key apt_dir candidates listed=""
    codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
    if [[ -n "${FT_DEBIAN_SUITE:-}" ]]; then
        candidates=("$FT_DEBIAN_SUITE")
    else
        candidates=($(next_debian "$codename" || true) testing unstable)
    fi
    mirror=$(mirror_for "$codename")
    [[ -n "$mirror" ]] || die "no apt entry for '$codename' in /etc/apt/sources.list* to take a mirror from: set FT_SOURCE or PYTHON_FT"
    key=$(keyring)
    [[ -n "$key" ]] || die "no apt archive keyring found to check the source indexes with"
    apt_dir=$WORK/apt
    mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$apt_dir/etc" "$WORK/src"
    local opts=(-o "Dir::Etc::SourceList=$apt_dir/etc/sources.list" -o "Dir::Etc::SourceParts=/nonexistent"
                -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache=$apt_dir" -o "Dir::Cache::Archives=$apt_dir/archives"
                -o "Debug::NoLocking=1" -o "APT::Sandbox::User=root")
    # each candidate suite whose signed source index lists the package, until one's archive can be fetched
    local log=$WORK/apt-source.log fetched="" failures=()
    for suite in "${candidates[@]}"; do
        echo "deb-src [signed-by=$key] $mirror $suite main" >"$apt_dir/etc/sources.list"
        rm -rf "$apt_dir/lists"; mkdir -p "$apt_dir/lists/partial"
        if ! apt-get "${opts[@]}" -q update >"$log" 2>&1; then
            failures+=("$suite: apt-get update failed"); continue
        fi
        listed=$(apt-cache "${opts[@]}" showsrc "$PACKAGE" 2>/dev/null | awk '/^Version:/ {print $2}' | sort -V | tail -n 1 || true)
        if [[ -z "$listed" ]]; then
            failures+=("$suite: its source index does not list $PACKAGE"); continue
        fi
        say "fetching the source package $PACKAGE $listed of $suite from $mirror (mirror of this machine's '$codename' entry; keyring $key)"
        if (cd "$WORK/src" && apt-get "${opts[@]}" -q source --download-only "$PACKAGE" >"$log" 2>&1); then
            fetched=$suite; break
        fi
        local why
        why=$(grep -oE '(404|403|Not Found|Hash Sum mismatch|Could not resolve)[^[]*' "$log" | head -n 1 | sed 's/ *$//' || true)
        failures+=("$suite: lists $PACKAGE $listed, but its source archive cannot be fetched${why:+ ($why)}")
        say "${failures[-1]}"
    done
    if [[ -z "$fetched" ]]; then
        local f
        for f in "${failures[@]}"; do say "  $f"; done
        die "no source archive of $PACKAGE could be fetched from $mirror (suites tried: ${candidates[*]}): nothing was built. Give one yourself: FT_SOURCE=/path/to/Python-$VERSION.x.tar.xz or PYTHON_FT=/path/to/python${VERSION}t"
    fi
    FT_SOURCE=$(ls "$WORK"/src/"${PACKAGE}"_*.orig.tar.xz 2>/dev/null | head -n 1 || true)
    [[ -n "$FT_SOURCE" ]] || die "the $PACKAGE source package has no .orig.tar.xz (the upstream tarball) in $WORK/src"
}

if [[ -z "${FT_SOURCE:-}" ]]; then
    say "no free-threaded interpreter at $PREFIX and no PYTHON_FT: will download an upstream CPython source"
    if [[ "${FT_OPTIMIZE:-0}" == 1 ]]; then
        say "archive (~21 MB) and build it with --disable-gil, PGO and LTO into $PREFIX (several times the ~10 min"
        say "of a plain build on 2 cores: the profiling run and the link-time optimization; ~400 MB)"
    else
        say "archive (~21 MB) and build it with --disable-gil into $PREFIX (~10 min on 2 cores, ~400 MB)"
    fi
    fetch_debian_source
fi
[[ -r "$FT_SOURCE" ]] || die "FT_SOURCE=$FT_SOURCE is not readable"

say "building $FT_SOURCE (upstream CPython) with --disable-gil into $PREFIX using $JOBS jobs"
rm -rf "$WORK/cpython"
mkdir -p "$WORK/cpython"
tar -xf "$FT_SOURCE" -C "$WORK/cpython" --strip-components=1
[[ -x "$WORK/cpython/configure" ]] || die "$FT_SOURCE does not hold a CPython source tree (no configure)"
conf=(--disable-gil --prefix="$PREFIX" --with-ensurepip=install)
make_args=()
if [[ "${FT_OPTIMIZE:-0}" == 1 ]]; then
    conf+=(--enable-optimizations --with-lto)
    # the profile (training) run is the test suite's --pgo selection; a failing test there still leaves a valid
    # profile, but stops CPython's Makefile: on 3.13t under load test_generators failed once (and passed alone)
    make_args+=("PROFILE_TASK=-m test --pgo --timeout= || true")
fi
(
    cd "$WORK/cpython"
    ./configure "${conf[@]}" >"$WORK/configure.log" 2>&1 || { tail -n 30 "$WORK/configure.log"; exit 1; }
    make -j"$JOBS" "${make_args[@]}" >"$WORK/make.log" 2>&1 || { tail -n 40 "$WORK/make.log"; exit 1; }
    make install >"$WORK/install.log" 2>&1 || { tail -n 40 "$WORK/install.log"; exit 1; }
) || die "the CPython build failed: logs in $WORK"
ver=$(cd "$WORK/cpython" && ./python -c 'import sys; print("%d.%d" % sys.version_info[:2])')
ln -sfn "python${ver}t" "$PREFIX/bin/python3"
is_ft "$PREFIX/bin/python3" || die "the built interpreter is not free-threaded: logs in $WORK"
printf 'source: %s\nconfigure: %s\nbuild seconds: %s\n' "$(basename "$FT_SOURCE")" "${conf[*]}" "$SECONDS" >"$PREFIX/build-info"
say "built $PREFIX/bin/python3 in ${SECONDS}s (logs in $WORK; remove $WORK to reclaim ~500 MB)"
describe "$PREFIX/bin/python3"
