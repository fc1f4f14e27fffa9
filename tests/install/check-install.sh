#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# make check-install: both install routes, end to end, on the CPU stand-ins.
#   1. pip: a wheel built by the project's backend (from this build folder),
#      installed into a fresh venv with --no-build-isolation; the console
#      script, python -m leakwatch and import leakwatch, from that venv.
#      Skipped, with a message, when python has no working venv (a failure
#      under CI=true, as is any skip here).
#   2. make install into a temporary prefix; the command, the library and the
#      Python package from there; the man page renders (man -l) and covers
#      every command and variable; the completion completes; make uninstall
#      leaves the prefix as it was.
#
#   tests/install/check-install.sh BUILD      (PYTHON=python3 by default)
set -u
B=$(cd "${1:-build}" && pwd)
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
PYTHON=${PYTHON:-python3}
VERSION=$(cat "$ROOT/VERSION")
T=$(mktemp -d "${TMPDIR:-/tmp}/leakwatch-install.XXXXXX")
trap 'rm -rf "$T"' EXIT
passed=0
failed=0
LOOP="$ROOT/examples/train_loop.py"

ok() { passed=$((passed + 1)); }
fail() {
    failed=$((failed + 1))
    echo "check-install: FAIL: $*" >&2
}
# skip WHAT: a route that cannot run here; under CI (CI=true) a failure, as
# CI installs what each route needs (scripts/install-deps.sh test).
skip() {
    echo "check-install: SKIPPED $*" >&2
    case "${CI:-}" in "" | 0 | false | no) ;; *) fail "a skip under CI=$CI: $*" ;; esac
}
# check DESCRIPTION COMMAND...: the command must succeed.
check() {
    what=$1
    shift
    if "$@" >"$T/out" 2>&1; then ok; else
        fail "$what (status $?): $*"
        sed 's/^/    /' "$T/out" | tail -20 >&2
    fi
}
# has FILE TEXT: FILE contains TEXT.
has() {
    if grep -qF -- "$2" "$1"; then ok; else
        fail "$1 lacks '$2'"
        sed 's/^/    /' "$1" | head -20 >&2
    fi
}
# status WANT DESCRIPTION COMMAND...
status() {
    want=$1 what=$2
    shift 2
    "$@" >"$T/out" 2>&1
    got=$?
    if [ "$got" = "$want" ]; then ok; else
        fail "$what: status $got, expected $want: $*"
        sed 's/^/    /' "$T/out" | tail -20 >&2
    fi
}
# The report's "version" and verdict, and a Python site named in it.
report_is() { # FILE VERDICT
    "$PYTHON" - "$1" "$2" "$VERSION" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert r["version"] == sys.argv[3], "report version %r, VERSION %r" % (r["version"], sys.argv[3])
v = r["verdict"] if isinstance(r["verdict"], str) else r["verdict"].get("status")
assert v == sys.argv[2], "verdict %r" % (v,)
EOF
}

# ---- 1. pip ----
venv_ok=1
if ! "$PYTHON" -m venv "$T/v" >"$T/venv.log" 2>&1 || [ ! -x "$T/v/bin/pip" ]; then
    venv_ok=0
    skip "the pip route: '$PYTHON -m venv' does not work here" \
        "($(tail -1 "$T/venv.log")); Debian/Ubuntu: apt-get install python3-venv"
fi
if [ $venv_ok = 1 ]; then
    V="$T/v"
    # The wheel from this build folder (make is a no-op when it is current),
    # as pip builds it for pip install . --no-build-isolation.
    check "pip wheel --no-build-isolation" env LEAKWATCH_BUILD_DIR="$B" PIP_NO_INDEX=1 \
        "$V/bin/pip" wheel --no-build-isolation --no-deps -q -w "$T/dist" "$ROOT"
    whl=$(ls "$T"/dist/leakwatch-*.whl 2>/dev/null | head -1)
    case "$whl" in
    *-"$VERSION"-py3-none-linux_*.whl) ok ;;
    *) fail "wheel name '$whl': expected leakwatch-$VERSION-py3-none-linux_ARCH.whl" ;;
    esac
    check "pip install the wheel" env PIP_NO_INDEX=1 "$V/bin/pip" install -q "$whl"
    site=$("$V/bin/python" -c 'import leakwatch, os; print(os.path.dirname(leakwatch.__file__))')
    case "$site" in
    "$V"/*) ok ;;
    *) fail "import leakwatch found '$site', not the venv's copy" ;;
    esac

    check "leakwatch --version" "$V/bin/leakwatch" --version
    has "$T/out" "leakwatch $VERSION"
    has "$T/out" "library: $site/_bin/libleakwatch.so"
    check "python -m leakwatch --library" "$V/bin/python" -m leakwatch --library
    has "$T/out" "$site/_bin/libleakwatch.so"
    check "import leakwatch" "$V/bin/python" -c "
import leakwatch
assert leakwatch.__version__ == '$VERSION', leakwatch.__version__
assert callable(leakwatch.step) and callable(leakwatch.dump) and not leakwatch.enabled()
assert leakwatch.library_path() == '$site/_bin/libleakwatch.so', leakwatch.library_path()
leakwatch.step(); leakwatch.dump()"
    [ -f "$V/share/man/man1/leakwatch.1" ] && ok || fail "the wheel did not install share/man/man1/leakwatch.1"
    [ -f "$V/share/bash-completion/completions/leakwatch" ] && ok ||
        fail "the wheel did not install share/bash-completion/completions/leakwatch"

    # The console script on a C program and on Python, on the stand-ins.
    check "venv: leakwatch run (C)" "$V/bin/leakwatch" run --cuda-stand-ins -q -r "$T/c.json" -- \
        "$B/examples/train_loop" --steps 200
    check "venv: C report" report_is "$T/c.json" leak
    check "venv: leakwatch run (Python)" "$V/bin/leakwatch" run --cuda-stand-ins -q -r "$T/py.json" -- \
        "$V/bin/python" "$LOOP" --steps 200
    check "venv: Python report" report_is "$T/py.json" leak
    # python -m leakwatch: a script runs with this interpreter.
    check "venv: python -m leakwatch run" "$V/bin/python" -m leakwatch run --cuda-stand-ins -q \
        -r "$T/m.json" "$LOOP" --steps 200
    check "venv: python -m report" report_is "$T/m.json" leak
    check "venv: python -m leakwatch report" "$V/bin/python" -m leakwatch report "$T/m.json"
    has "$T/out" "LEAK"
    has "$T/out" "train_loop.py:"
    status 3 "venv: --fail-on-leak" "$V/bin/python" -m leakwatch run --cuda-stand-ins -q \
        --fail-on-leak "$LOOP" --steps 200
    status 0 "venv: --fail-on-leak, fixed" "$V/bin/leakwatch" run --cuda-stand-ins -q \
        --fail-on-leak -- "$V/bin/python" "$LOOP" --steps 200 --fixed
    # In the job: the venv's library is loaded and its auto-start is on PYTHONPATH.
    check "venv: the job sees the package's library" "$V/bin/leakwatch" run --cuda-stand-ins -q -- \
        "$V/bin/python" -c "
import os, leakwatch
assert leakwatch.loaded_version() == '$VERSION', leakwatch.loaded_version()
assert os.environ['LD_PRELOAD'].split(':')[0] == '$site/_bin/libleakwatch.so', os.environ['LD_PRELOAD']
assert os.environ['LD_LIBRARY_PATH'].split(':')[0] == '$site/_bin/stand-ins', os.environ['LD_LIBRARY_PATH']
assert os.path.realpath(os.environ['PYTHONPATH'].split(':')[0]) == os.path.realpath('$site/_autostart'), os.environ['PYTHONPATH']"
    # python -m leakwatch's list of run's value options is run's own.
    check "RUN_VALUE_OPTIONS agrees with leakwatch run --help" "$V/bin/python" -c "
import subprocess, leakwatch.__main__ as m
h = subprocess.run(['$V/bin/leakwatch', 'run', '--help'], capture_output=True, text=True).stdout
want = set()
for line in h.split('options:')[1].split('\n\n')[0].splitlines():
    words = line.replace(',', ' ').split()
    if not words or not words[0].startswith('-'):
        continue
    opts = [w for w in words if w.startswith('-')]
    i = len(opts)
    if i < len(words) and words[i].isupper():
        want.update(opts)
assert want == set(m.RUN_VALUE_OPTIONS), (sorted(want), sorted(m.RUN_VALUE_OPTIONS))"
    # pip uninstall takes everything the wheel put there.
    check "pip uninstall" "$V/bin/pip" uninstall -y -q leakwatch
    for f in "$site" "$V/bin/leakwatch" "$V/share/man/man1/leakwatch.1" \
        "$V/share/bash-completion/completions/leakwatch"; do
        if [ -e "$f" ]; then fail "pip uninstall left $f"; else ok; fi
    done
fi

# ---- 2. make install ----
P="$T/prefix"
mkdir -p "$P"
check "make install" make -s -C "$ROOT" install B="$B" PREFIX="$P"
check "installed --version" "$P/bin/leakwatch" --version
has "$T/out" "leakwatch $VERSION"
has "$T/out" "library: $P/lib/libleakwatch.so"
check "installed: leakwatch run (C)" "$P/bin/leakwatch" run --cuda-stand-ins -q -r "$T/i.json" -- \
    "$B/examples/train_loop" --steps 200
check "installed: report" report_is "$T/i.json" leak
check "installed: leakwatch report" "$P/bin/leakwatch" report "$T/i.json"
has "$T/out" "LEAK"
check "installed: the Python package" env PYTHONPATH="$P/share/leakwatch/python" "$PYTHON" -c "
import leakwatch
assert leakwatch.__version__ == '$VERSION', leakwatch.__version__
assert leakwatch.library_path() == '$P/lib/libleakwatch.so', leakwatch.library_path()
assert leakwatch.command_path() == '$P/bin/leakwatch', leakwatch.command_path()"
check "installed: Python job, auto-start found" "$P/bin/leakwatch" run --cuda-stand-ins -q -- \
    "$PYTHON" -c "
import os, leakwatch
assert leakwatch.loaded_version() == '$VERSION'
assert os.environ['PYTHONPATH'].split(':')[0] == '$P/share/leakwatch/python/leakwatch/_autostart', os.environ['PYTHONPATH']"

MAN="$P/share/man/man1/leakwatch.1"
if command -v man >/dev/null 2>&1; then
    if LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -l "$MAN" >"$T/man.txt" 2>"$T/man.err" &&
        [ ! -s "$T/man.err" ]; then ok; else
        fail "man -l $MAN: $(head -5 "$T/man.err")"
    fi
    for c in run report ps top snapshot; do has "$T/man.txt" "leakwatch $c"; done
    for v in $("$P/bin/leakwatch" help env | awk '/^  LEAKWATCH_/ {print $1}'); do
        has "$T/man.txt" "$v"
    done
    has "$T/man.txt" "--cuda-stand-ins"
    has "$T/man.txt" "leakwatch $VERSION"
else
    skip "rendering the man page: no man here" \
        "(scripts/install-deps.sh test installs man-db)"
fi
if command -v bash >/dev/null 2>&1; then
    check "bash completion" bash -c '
. "$1"
c() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); COMPREPLY=(); _leakwatch; echo "${COMPREPLY[*]}"; }
[ "$(c leakwatch r)" = "run report" ] || { echo "commands: $(c leakwatch r)"; exit 1; }
case " $(c leakwatch run --cu) " in *" --cuda-stand-ins "*) ;; *) echo "run options: $(c leakwatch run --cu)"; exit 1 ;; esac
[ "$(c leakwatch run --mode "")" = "segments tensors" ] || { echo "modes: $(c leakwatch run --mode "")"; exit 1; }
[ "$(c leakwatch report -f "")" = "text json html" ] || { echo "formats"; exit 1; }
' sh "$P/share/bash-completion/completions/leakwatch"
fi

check "make uninstall" make -s -C "$ROOT" uninstall B="$B" PREFIX="$P"
left=$(find "$P" -mindepth 1 | head -5)
if [ -z "$left" ]; then ok; else fail "make uninstall left in the prefix: $left"; fi
# Folders that were there before stay.
mkdir -p "$P/bin" "$P/share/man/man1"
check "make install (2)" make -s -C "$ROOT" install B="$B" PREFIX="$P"
check "make uninstall (2)" make -s -C "$ROOT" uninstall B="$B" PREFIX="$P"
left=$(cd "$P" && find . -mindepth 1 | sort | tr '\n' ' ')
if [ "$left" = "./bin ./share ./share/man ./share/man/man1 " ]; then ok; else
    fail "make uninstall after install into existing folders left: $left"
fi

echo "check-install: $passed checks passed, $failed failed"
[ "$failed" = 0 ]
