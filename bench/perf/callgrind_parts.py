# SPDX-License-Identifier: Apache-2.0
"""Where the shim's added instructions per pair go (bench/perf/callgrind_py.sh).

    python3 callgrind_parts.py PAIRS BARE_N1 BARE_N2 SHIM_N1 SHIM_N2

Each argument after PAIRS is a callgrind.out file (callgrind_py.sh keeps the
pair-making thread's); PAIRS is N2 - N1. Reads
each function's own (exclusive) instructions with callgrind_annotate, takes
(shim(N2) - shim(N1)) - (bare(N2) - bare(N1)) per function, divides by
PAIRS, and sums them into parts by function name (PARTS below; the first
pattern that matches wins). Prints the parts, then the largest functions.
Standard library only.
"""

import collections
import re
import subprocess
import sys

# (part, regular expression on "object:function"), first match wins.
PARTS = [
    ("newly loaded libraries (lw_bind_poll)", r"lw_bind_poll|counts_of|dl_iterate_phdr|rtld_lock"),
    ("Python frames", r"capture_cached|lw_py_|lw_stack_py_cache|py_cache_first|PyGILState|"
     r"pthread_getspecific|lw_pystack"),
    ("native walk to the interpreter", r"fast_walk|lw_stack_|lw_unw_|rule_for|eval_range|"
     r"state_for_thread|compact_checks"),
    ("bookkeeping (record, events, totals, live, sites)", r"lw_record_|lw_event_|lw_totals_|"
     r"lw_live_|lw_site|lw_run_|lw_device_|lw_started|clock_gettime|site_for|lw_hash|"
     r"lw_opt_|lw_step"),
    ("hook layers (exports, entries, real functions, the stand-ins)", r"."),
]


def own_costs(path):
    out = subprocess.run(["callgrind_annotate", "--threshold=100", path], capture_output=True,
                         text=True, check=True).stdout
    d = collections.Counter()
    for line in out.splitlines():
        m = re.match(r"\s*([0-9,]+) .*?(\S+):(\S+) \[(\S+)\]\s*$", line)
        if not m:
            m2 = re.match(r"\s*([0-9,]+) .*?(\S+):(\S+)\s*$", line)
            if not m2 or "PROGRAM" in line:
                continue
            n, fn, obj = m2.group(1), m2.group(3), "?"
        else:
            n, fn, obj = m.group(1), m.group(3), m.group(4).rsplit("/", 1)[-1]
        d[obj + ":" + fn] += int(n.replace(",", ""))
    return d


def main():
    pairs = int(sys.argv[1])
    b1, b2, s1, s2 = (own_costs(p) for p in sys.argv[2:6])
    keys = set(b1) | set(b2) | set(s1) | set(s2)
    added = {k: ((s2[k] - s1[k]) - (b2[k] - b1[k])) / pairs for k in keys}
    parts = collections.Counter()
    for k, v in added.items():
        for name, rx in PARTS:
            if re.search(rx, k):
                parts[name] += v
                break
    total = sum(added.values())
    for name, _ in PARTS:
        print("    %-62s %6.0f" % (name, parts[name]))
    print("    %-62s %6.0f" % ("all (functions' own instructions)", total))
    print("    largest functions:")
    for k, v in sorted(added.items(), key=lambda x: -abs(x[1]))[:int(__import__("os").environ.get("LW_CG_TOP", "16"))]:
        if abs(v) >= 4:
            print("      %6.0f  %s" % (v, k))


if __name__ == "__main__":
    main()
