#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# How the golden inputs (inputs/*.json) were made: real runs on the CPU
# stand-ins (and, for the PyTorch one, Debian's real PyTorch 2.6 in the
# real-clients root, scripts/in-real-root.sh), normalised by normalise.py.
# Run it only to make the inputs again on purpose (a report field added that
# the renderers show): the runs' numbers then differ, and every expected
# output must be made again (make golden-update) and its diff read.
#   tests/tools/golden/make-inputs.sh [BUILD]   (from the repository root)
set -eu
B=${1:-build}
here=tests/tools/golden
raw=$(mktemp -d /tmp/lwgolden.XXXXXX)
trap 'rm -rf "$raw"' EXIT
make -s B="$B" all "$B/tests/lib/libcuda.so.1" "$B/tests/lib/libcudart.so" \
    "$B/tests/programs/rt_workload" "$B/tests/programs/drv_paths" "$B/tests/programs/rt_paths"
run() { # NAME CMD...: a report of CMD under leakwatch run on the stand-ins
    n=$1
    shift
    LD_LIBRARY_PATH="$B/tests/lib" "$B/leakwatch" run -q -r "$raw/$n.json" -- "$@" >/dev/null
}
# A leak named at a Python line (ctypes into the stand-in runtime).
run leak_python env LW_CUDART="$B/tests/lib/libcudart.so" python3 tests/python/leak_ctypes.py
# A clean run: a steady floor under transients.
run clean "$B/tests/programs/rt_workload" --steps 200 --base 64M --transient 16M
# Too few steps for the noise: inconclusive.
run inconclusive "$B/tests/programs/rt_workload" --steps 12 --base 64M --transient 16M \
    --leak 4K --noise 1M
# A floor that rose once and held level: no leak, though the fit slopes.
run one_time_rise "$B/tests/programs/rt_workload" --steps 300 --base 64M --transient 16M \
    --staircase 512M:1000:200:150
# Two sites through one allocation wrapper, named by their callers.
run wrapped_python env LW_CUDART="$B/tests/lib/libcudart.so" python3 tests/python/wrapped_alloc.py
# An allocation the device refused (4 GiB asked of a 1 GiB stand-in device).
run failed_alloc env FAKE_CUDA_MEM_BYTES=1073741824 "$B/tests/programs/rt_paths" oom 1 4294967296
# Imports (IPC memory of another process) on device 0, and a run on device 1
# whose device row is added: one report of two devices.
run imports "$B/tests/programs/drv_paths" ipc 3 1048576
run device1 "$B/tests/programs/rt_paths" device1 3 1048576
# PyTorch: the seed's loss-history leak on real PyTorch 2.6 (the tensors'
# sites from its allocation history, the owner that keeps them).
root=$(sh scripts/setup-real-clients.sh)
sh scripts/in-real-root.sh "$root" STEPS=400 PYTHONDONTWRITEBYTECODE=1 \
    "$B/leakwatch" run --cuda-stand-ins -q -r "$PWD/$B/golden-torch.json" -- \
    python3 tests/python/torch_seed.py loss >/dev/null
mv "$B/golden-torch.json" "$raw/torch_tensors.json"
for n in clean inconclusive failed_alloc one_time_rise wrapped_python; do
    python3 "$here/normalise.py" "$raw/$n.json" "$n" >"$here/inputs/$n.json"
done
# The two leaks as ranks 0 and 1 of one job of two processes.
python3 "$here/normalise.py" "$raw/leak_python.json" leak_python --rank 0/2 >"$here/inputs/leak_python.json"
python3 "$here/normalise.py" "$raw/torch_tensors.json" torch_tensors --rank 1/2 >"$here/inputs/torch_tensors.json"
python3 "$here/normalise.py" "$raw/imports.json" imports_devices --devices-from "$raw/device1.json" \
    >"$here/inputs/imports_devices.json"
echo "make-inputs: $here/inputs/*.json made again; now: make golden-update"
