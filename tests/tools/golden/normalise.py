#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Turns a report written by a real run into a golden input (make-inputs.sh):
what varies from run to run or machine to machine is replaced by fixed values,
so that the committed input says the same wherever it was made:
  pid 4242, host "gpu-node-7", written_at 1700000000 (2023-11-14 22:13:20
  UTC), duration_s rounded to 0.1 s, report_path "NAME.json", the checkout's
  folder "/src/leakwatch", the interpreter's path "python3".
  normalise.py RAW.json NAME [--rank R/W] [--devices-from OTHER.json] > inputs/NAME.json
--rank R/W makes it the report of rank R (local rank R) of W processes.
--devices-from adds OTHER's per-device rows (devices RAW has not) to RAW's
by_device and their counts to RAW's totals: one report of a run on two
devices, from two runs of one device each. Output: indent 1, keys in the
report's own order (the renderers' byte-for-byte comparison needs no more)."""
import json
import os
import re
import sys

COUNTS = ("alloc_count", "free_count", "failed_alloc_count", "live_bytes", "live_count",
          "peak_live_bytes")


def add_counts(into, other):
    for k in COUNTS:
        if k in into and k in other:
            into[k] += other[k]


def main():
    args = sys.argv[1:]
    other = None
    if "--devices-from" in args:
        i = args.index("--devices-from")
        other = args[i + 1]
        del args[i:i + 2]
    rank = None
    if "--rank" in args:
        i = args.index("--rank")
        rank = [int(x) for x in args[i + 1].split("/")]
        del args[i:i + 2]
    raw, name = args
    checkout = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    text = open(raw).read().replace(checkout, "/src/leakwatch")
    text = re.sub(r'"/[^" ]*/bin/python3(\.\d+)?', '"python3', text)
    d = json.loads(text)
    d["pid"] = 4242
    d["host"] = "gpu-node-7"
    d["written_at"] = 1700000000
    d["duration_s"] = round(d["duration_s"], 1)
    if d.get("report_path"):
        d["report_path"] = name + ".json"
    if rank:
        d["rank"], d["local_rank"], d["world_size"] = rank[0], rank[0], rank[1]
    if other:
        o = json.load(open(other))
        have = {r["device"] for r in d["totals"]["by_device"]}
        for row in o["totals"]["by_device"]:
            if row["device"] in have:
                continue
            d["totals"]["by_device"].append(row)
            add_counts(d["totals"], row)
            for kind, c in row.get("by_kind", {}).items():
                if kind in d["totals"]["by_kind"]:
                    add_counts(d["totals"]["by_kind"][kind], c)
                else:
                    d["totals"]["by_kind"][kind] = dict(c)
    json.dump(d, sys.stdout, indent=1)
    sys.stdout.write("\n")


main()
