# SPDX-License-Identifier: Apache-2.0
"""python -m leakwatch: the leakwatch command, from the Python environment it
is installed in.

    python -m leakwatch run train.py --epochs 3   # this Python runs train.py
    python -m leakwatch run -- python train.py    # as 'leakwatch run'
    python -m leakwatch report leakwatch-1234.json
    python -m leakwatch --library                 # the libleakwatch.so to preload

Everything but --library is the bundled command's (leakwatch --help). The one
addition: 'run' given a Python script (*.py) or "-m MODULE" / "-c CODE" as the
program runs it with this interpreter, sys.executable.

The `leakwatch` console script (main()) is the bundled command exactly, with
no such addition.
"""

import os
import sys

import leakwatch

# The options of 'leakwatch run' that take a value, to tell where the
# program's own arguments begin. tests/install checks this list against
# 'leakwatch run --help'.
RUN_VALUE_OPTIONS = frozenset(
    "-r --report --interval --mode --report-every --prometheus --max-frames "
    "--max-sites --report-sites -s --set --library --user-code".split()
)
RUN_SHORT_VALUE = frozenset(o[1] for o in RUN_VALUE_OPTIONS if len(o) == 2)


def _program_index(args):
    """Index in args (after 'run') where the program begins, and whether a
    '--' precedes it; len(args) when there is none."""
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            return i + 1, True
        if a in ("-m", "-c"):  # python's, never run's
            return i, False
        if a.startswith("--"):
            if "=" not in a and a in RUN_VALUE_OPTIONS:
                i += 1
        elif a.startswith("-") and len(a) > 1:
            # A cluster of short options: the first that takes a value takes
            # the rest of the word, or the next word.
            for j, ch in enumerate(a[1:]):
                if ch in RUN_SHORT_VALUE:
                    if j == len(a) - 2:
                        i += 1
                    break
        else:
            return i, False
        i += 1
    return len(args), False


def python_run_args(args, python=None):
    """The 'leakwatch run' arguments for args, with this interpreter put in
    front of a Python script or of -m/-c."""
    python = python or sys.executable
    k, dashed = _program_index(args)
    if k >= len(args):
        return list(args)
    prog = args[k]
    if prog in ("-m", "-c") or prog.endswith(".py"):
        opts = args[: k - 1] if dashed else args[:k]
        return opts + ["--", python] + args[k:]
    return list(args)


def _exec(args):
    try:
        cmd = leakwatch.command_path()
    except FileNotFoundError as e:
        sys.stderr.write("%s\n" % e)
        return 1
    try:
        os.execv(cmd, ["leakwatch"] + args)
    except OSError as e:
        sys.stderr.write("leakwatch: cannot run %s: %s\n" % (cmd, e.strerror))
        return 126


def main(argv=None):
    """python -m leakwatch."""
    args = list(sys.argv[1:] if argv is None else argv)
    if args[:1] == ["--library"]:
        if len(args) > 1:
            sys.stderr.write("leakwatch: --library takes no argument\n")
            return 2
        try:
            print(leakwatch.library_path())
        except FileNotFoundError as e:
            sys.stderr.write("%s\n" % e)
            return 1
        return 0
    if args[:1] == ["run"]:
        args = ["run"] + python_run_args(args[1:])
    return _exec(args)


def console():
    """The `leakwatch` console script: the bundled command, as it is."""
    return _exec(sys.argv[1:])


if __name__ == "__main__":
    sys.exit(main())
