#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# scripts/check-doc-drift.py (make docs-check) on a small tree of its own: it
# passes on docs that agree with the examples and with the run they quote
# (other times, counts and pids included: nothing flaky), and fails, naming
# the doc's line, on each drift planted: a cited line moved, a function
# renamed, "line N" in examples/README.md, a quoted place, rate or verdict
# word, a shape whose words changed, a pasted block (docs-check: paste) with a
# command not found or another exit status than it says. A stand-in leakwatch prints the run's
# output. Also: the project's own docs agree with its examples (--no-run).
#   tests/scripts/test-check-doc-drift.sh      (make check-scripts)
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/lw-doc-drift.XXXXXX") || exit 1
trap 'rm -rf "$T"' EXIT
failed=0
mkdir -p "$T/tree/examples" "$T/build/examples"

cat >"$T/tree/examples/loop.c" <<'EOF'
static void keep(void **h, int i) {
    cudaMalloc(&h[i], 512); /* leak-line */
}
int main(void) {
    return 0;
}
EOF
cat >"$T/tree/examples/loop.py" <<'EOF'
def train():
    x = 1
    loss = alloc(512)  # leak-line
EOF
# The run the docs quote: the stand-in leakwatch prints it (with other times,
# counts and pids than the docs quote).
cat >"$T/build/leakwatch" <<'EOF'
#!/bin/sh
echo "leakwatch: watching PID 777 (build/examples/loop --steps 9); leakwatch top 777"
echo "leakwatch: LEAK in loop.c:2 in keep: +512 B/step (95% CI 512 B .. 512 B) since step 2; out of memory in 3 d 20 h (167,378,943 steps) at this rate (79.8 GiB free of 80.0 GiB) [as of step 64]"
echo "trained"
echo "leakwatch: 602 allocations live (192.3 MiB, peak 224.4 MiB) in 4 call sites; 5,402 allocated, 4,800 freed, 0 failed"
EOF
chmod +x "$T/build/leakwatch"
: >"$T/build/examples/loop"

good_readme() {
    cat <<'EOF'
# demo

The place: `loop.c:2 in keep`; in Python, loop.py:3 in train. Invented: `train.py:27 in train`.

<!-- docs-check: shape leakwatch run -- build/examples/loop --steps 9 -->
```
leakwatch: LEAK in train.py:27 in train: +1.5 KiB/step (95% CI 1.0 KiB .. 2.0 KiB) since step 4; out of memory in 6 h 12 min (9,000 steps) at this rate (8.0 GiB free of 8.0 GiB) [as of step 64]
```

<!-- docs-check: run leakwatch run -- build/examples/loop --steps 9 -->
```
$ leakwatch run -- build/examples/loop --steps 9
leakwatch: watching PID 4242 (build/examples/loop --steps 9); leakwatch top 4242
leakwatch: LEAK in loop.c:2 in keep: +512 B/step (95% CI 512 B .. 512 B) since step 2; out of memory in 3 d 21 h (167,378,444 steps) at this rate (79.8 GiB free of 80.0 GiB) [as of step 64]
leakwatch: 600 allocations live (192.1 MiB, peak 224.3 MiB) in 4 call sites; 5,400 allocated, 4,800 freed, 0 failed
```

<!-- docs-check: paste -->
```sh
export PATH="$PWD/build:$PATH"   # after make
leakwatch run -- build/examples/loop --steps 9; echo $?   # 0
```
EOF
}
good_examples() {
    printf '| File | What |\n| --- | --- |\n| `loop.py` | leaks at line 3 |\n'
}

# check NAME WANT(pass|fail) [EXPECTED TEXT]: runs the checker on the tree.
check() {
    python3 "$root/scripts/check-doc-drift.py" --root "$T/tree" --build "$T/build" >"$T/out" 2>&1
    rc=$?
    if [ "$2" = pass ] && [ $rc -ne 0 ]; then
        failed=$((failed + 1))
        echo "test-check-doc-drift: FAIL: $1: failed on docs that agree" >&2
        sed 's/^/    /' "$T/out" >&2
    elif [ "$2" = fail ] && { [ $rc -eq 0 ] || ! grep -qF -- "$3" "$T/out"; }; then
        failed=$((failed + 1))
        echo "test-check-doc-drift: FAIL: $1: want a failure saying \"$3\"" >&2
        sed 's/^/    /' "$T/out" >&2
    fi
}
# plant NAME SED-EXPRESSION EXPECTED: the good docs with one drift.
plant() {
    good_readme | sed "$2" >"$T/tree/README.md"
    good_examples >"$T/tree/examples/README.md"
    check "$1" fail "$3"
}

good_readme >"$T/tree/README.md"
good_examples >"$T/tree/examples/README.md"
check "the docs as they are" pass

plant "a cited line moved" 's/loop\.c:2 in keep`/loop.c:1 in keep`/' 'README.md:3: loop.c:1 in keep'
plant "a Python line moved" 's/loop\.py:3/loop.py:2/' 'README.md:3: loop.py:2 in train'
plant "a function renamed" 's/loop\.c:2 in keep`/loop.c:2 in main`/' 'is in keep, not main'
plant "a quoted place" '/docs-check: run/,$ s/loop\.c:2 in keep/loop.c:5 in main/' 'README.md:14: quoted output'
plant "a quoted rate" '/docs-check: run/,$ s/+512 B\/step/+256 B\/step/' 'README.md:14: quoted output'
plant "a quoted verdict word" '/docs-check: run/,$ s/LEAK in/leak in/' 'README.md:14: quoted output'
plant "a quoted summary's words" '/docs-check: run/,$ s/call sites/sites/' 'README.md:15: quoted output'
plant "a shape's words" '/LEAK in train\.py/ s/at this rate/at that rate/' 'README.md:7: quoted output'
plant "a pasted command not on PATH" '/^export PATH/d' 'a pasted command fails: '
plant "a pasted status" 's/echo \$?   # 0/echo $?   # 3/' "README.md:21: pasted, this line's status is 0, the doc says 3"
plant "a block without its comment's fence" 's/^<!-- docs-check: run \(.*\) -->$/<!-- docs-check: run \1 -->\n/' \
    'not followed by a fenced block'

good_readme >"$T/tree/README.md"
good_examples | sed 's/line 3/line 2/' >"$T/tree/examples/README.md"
check "line N in examples/README.md" fail 'examples/README.md:3: line 2 for loop.py'

# A line no longer marked leak-line (the mark moved with the code).
good_examples >"$T/tree/examples/README.md"
sed -i 's| /\* leak-line \*/||' "$T/tree/examples/loop.c"
check "the mark removed" fail 'not marked leak-line (marked: none)'

# The project's own docs against its examples (the quoted runs need a build:
# make docs-check).
if ! python3 "$root/scripts/check-doc-drift.py" --no-run >"$T/out" 2>&1; then
    failed=$((failed + 1))
    echo "test-check-doc-drift: FAIL: the project's docs cite example lines that drifted" >&2
    sed 's/^/    /' "$T/out" >&2
fi

[ $failed -eq 0 ] || exit 1
echo "test-check-doc-drift: docs-check passes on agreeing docs and fails on each planted drift"
