#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/install-deps.sh in its checking modes, on a machine where Check is
# missing (a pkg-config stand-in that does not know it): a plain build
# (`check`, what a plain make runs) needs only what the build needs and
# passes; the test programs (`check-test`, before make test-bins) stop with
# one line naming the Debian package. Installs nothing.
#   tests/scripts/test-install-deps.sh      (make check-scripts)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-install-deps.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
fail() {
    failed=$((failed + 1))
    echo "test-install-deps: FAIL: $*" >&2
    sed 's/^/    /' "$T/out" >&2
}
# pkg-config as the machine has it, less Check.
real=$(command -v pkg-config || echo /bin/false)
cat >"$T/pkg-config" <<EOF
#!/bin/sh
for a in "\$@"; do [ "\$a" = check ] && exit 1; done
exec "$real" "\$@"
EOF
chmod +x "$T/pkg-config"
# The rest of what a build needs must be here for the first case to mean
# anything: the machine that runs the tests has built the project.
if PATH="$T:$PATH" sh "$root/scripts/install-deps.sh" check >"$T/out" 2>&1; then :; else
    fail "a plain build asks for what only the tests need"
fi
if PATH="$T:$PATH" sh "$root/scripts/install-deps.sh" check-test >"$T/out" 2>&1; then
    fail "the test programs' check passed without Check"
elif [ "$(wc -l <"$T/out")" -ne 1 ] || ! grep -q "missing what the test programs need.* check;" "$T/out"; then
    fail "the test programs' check does not name the package in one line"
fi
[ $failed -eq 0 ] || exit 1
echo "test-install-deps: a plain build needs no test framework; the test programs name it when missing"
