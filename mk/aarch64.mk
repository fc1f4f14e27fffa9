# SPDX-License-Identifier: Apache-2.0
# The AArch64 tier (make check-aarch64).

# AArch64: cross-built (gcc-aarch64-linux-gnu, an arm64 sysroot unpacked into
# the cache folder) and run under qemu-user; see scripts/check-aarch64.sh.
#
# What runs under qemu: the tests of what can differ on AArch64, not the whole
# suite again (the x86-64 plain, ASan and valgrind runs cover the rest):
#  - every unit test, test_stubs (the stand-ins every test runs on) and
#    test_pyframes (the Python frame walk of src/track/pyframes.c, its offsets
#    and thread-state lookup, on Debian's arm64 CPython 3.11 and 3.14: the
#    most architecture-specific test, 154 s of CPU under qemu, its two
#    CPythons at once) among them;
#    the others take seconds, and their C can differ here (char is unsigned
#    on AArch64; another libm);
#  - test_interpose: every path by which a program reaches CUDA memory (PLT
#    and GOT, dlsym, versioned symbols, tail calls), with the unwinder's
#    stacks naming the leaking function;
#  - test_python: the leaking Python line named by the shim inside the arm64
#    CPythons (GIL held and released);
#  - test_symbols: names, modules and file:line of AArch64 frames;
#  - test_stacks: every recorded stack checked against a full unwind
#    (LEAKWATCH_VERIFY_STACKS=1) by AArch64's unwinder (added: it passed
#    here in 8 s).
# Left out, each named (make check-aarch64 AARCH64_TESTS= runs
# scripts/check-aarch64.sh's whole list, these included; measured here, one
# at a time, under load: test_torch 751 s, test_detect 14 s, test_pyframes
# 466 s, test_python 306 s, test_interpose 28 s, the other units 50 s):
#  - test_torch: the stand-in torch's allocator history, the constructor's
#    environment for Python processes and automatic steps are Python and
#    architecture-neutral C, run by the x86-64 plain and ASan runs; the
#    Python frames and hooks beneath them are test_python's and
#    test_interpose's here;
#  - test_detect: the verdicts are the detector's arithmetic (test_detector,
#    test_growth, test_stats run here) over the hooks' events
#    (test_interpose); its time-interval case measures growth per second of
#    wall-clock time, which qemu on a loaded machine slows unevenly (it
#    failed so here: no_leak for a leak).
# Never run here: test_cli and test_safety (their programs exec further
# aarch64 programs, which qemu-user cannot follow), test_attach (x86-64 only).
AARCH64_TESTS ?= $(notdir $(UNIT_SRCS:.c=)) test_interpose test_python test_symbols test_stacks
check-aarch64:
	@scripts/check-aarch64.sh $(AARCH64_TESTS)
