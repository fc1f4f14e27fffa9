# SPDX-License-Identifier: Apache-2.0
# leakwatch — build, test, install.
#   make            build/libleakwatch.so and build/leakwatch
#   make check      every test (unit, integration, sanitizer build)
#   make demo       run the example workload under the shim on the CPU stand-ins
#   make bench      benchmarks (print numbers, never fail on them); make bench-callgrind:
#                   instructions per allocation under Python frames, and a report's
#                   symbolisation (valgrind); make bench-callgrind-torch: instructions
#                   per real PyTorch step
#   make install PREFIX=/usr/local   (make uninstall PREFIX=... removes it again)
#   make wheel      the Python package (pip install . does the same; see pyproject.toml)
# This file holds the settings, the file lists, the goals and the checks that
# run the suite in each build flavour (make check); the rest is in mk/*.mk,
# one file per concern, included below.

PREFIX ?= /usr/local
B ?= build
SAN ?=
CC ?= cc
PKG_CONFIG ?= pkg-config
# Quiet compiles; `make V=1` shows every command.
Q := $(if $(filter 1,$(V)),,@)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
# LW_EXTRA_CFLAGS / LW_EXTRA_LDFLAGS: extra include and library folders (the
# aarch64 cross build's sysroot, for instance).
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -g $(WARN) -I$(B)/include -Iinclude $(LW_EXTRA_CFLAGS)
# Header dependencies, written by the compiler next to each object.
DEPFLAGS := -MMD -MP

# The library's layers (docs/layout.md), lowest first. Each folder compiles
# with only its own and the lower layers' headers on the include path, so a
# lower layer cannot even name a higher one; make check-layers checks the
# calls from the objects' symbols. base: utilities; vocab: the report's
# words, shared with the command; loader: the real functions, the driver and
# the code epoch; process: the process-level files (start, exit, fork, the
# worker thread, the end-of-run signals, the public C API).
LAYERS := base vocab loader track analyze output process hooks attach
INC_base := -Isrc/base
INC_vocab := $(INC_base) -Isrc/vocab
INC_loader := $(INC_vocab) -Isrc/loader
INC_track := $(INC_loader) -Isrc/track
INC_analyze := $(INC_track) -Isrc/analyze
INC_output := $(INC_analyze) -Isrc/output
INC_process := $(INC_output) -Isrc/process
INC_hooks := $(INC_process) -Isrc/hooks
INC_attach := $(INC_hooks) -Isrc/attach
# A source's layer: its folder under src/. A loose src/*.c belongs to none
# ("loose": compiled with every layer's headers, and make check-layers fails
# on its object, build/obj/NAME.o).
layer_of = $(or $(word 2,$(subst /, ,$(dir $(1)))),loose)
INC_loose := $(INC_attach)
# Tests and fuzzers see every layer.
INC_ALL := $(INC_attach)
ifeq ($(SAN),1)
OPT := -O1 -fno-omit-frame-pointer -fsanitize=address,undefined -fno-sanitize-recover=undefined
SAN_LDFLAGS := -fsanitize=address,undefined
else ifeq ($(SAN),thread)
# GCC's maybe-uninitialized analysis gives false positives at -O1 under TSan.
OPT := -O1 -fno-omit-frame-pointer -fsanitize=thread -Wno-maybe-uninitialized
SAN_LDFLAGS := -fsanitize=thread
else
OPT := -O2
SAN_LDFLAGS :=
endif
CFLAGS_LIB := $(BASE_CFLAGS) $(OPT) -fPIC -fvisibility=hidden -pthread
# The lock order of attach, detach, the lifecycle and the fork handlers is
# checked (an abort with a message) in the sanitizer builds, or with
# LW_DEBUG_LOCK_ORDER=1 (src/base/lock_order.h).
ifneq ($(filter 1 thread,$(SAN))$(filter 1,$(LW_DEBUG_LOCK_ORDER)),)
CFLAGS_LIB += -DLW_DEBUG_LOCK_ORDER
endif
# Bench builds only: ABLATE=unwind|python|site removes that part of the
# allocation path (make ablate; bench/perf/FINDINGS.md).
ifneq ($(ABLATE),)
CFLAGS_LIB += -DLW_ABLATE_$(ABLATE)
endif
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
LIB_LIBS := $(LW_EXTRA_LDFLAGS) -ldl -pthread -lm
# The command reads reports with jansson, linked in statically when the static
# library is there, so the installed command (and the wheel) needs no
# libjansson at run time. The shim never links it.
JANSSON_A := $(firstword $(wildcard $(shell $(PKG_CONFIG) --variable=libdir jansson 2>/dev/null)/libjansson.a))
JSON_LIBS := $(if $(JANSSON_A),$(JANSSON_A),-ljansson)

LIB_SRCS := $(wildcard src/*.c src/*/*.c)
LIB_OBJS := $(LIB_SRCS:src/%.c=$(B)/obj/%.o)
# The command, in folders by role (docs/layout.md): base (its utilities),
# model (a report read back), render (text, JSON, HTML), live (the control
# socket's client), attach (the ptrace injection), commands (one file per
# subcommand); main.c dispatches. Headers are included by name, as the
# library's are, so every folder is on the include path.
TOOL_DIRS := base model render live attach commands
TOOL_INC := $(addprefix -Itools/,$(TOOL_DIRS))
TOOL_SRCS := $(filter-out tools/main.c,$(wildcard tools/*.c $(TOOL_DIRS:%=tools/%/*.c)))
TOOL_OBJS := $(TOOL_SRCS:tools/%.c=$(B)/obj/tools/%.o)
# ar keeps an archive's members by file name: two sources of one name in
# different folders would replace each other in liblw_core.a or liblw_tools.a.
same_names = $(strip $(foreach n,$(sort $(notdir $(1))),$(if $(word 2,$(filter %/$(n),$(1))),$(n))))
$(if $(call same_names,$(LIB_OBJS)),$(error two library sources share a name: $(call same_names,$(LIB_OBJS))))
$(if $(call same_names,$(TOOL_OBJS)),$(error two command sources share a name: $(call same_names,$(TOOL_OBJS))))

STUB_DIR := $(B)/tests/lib
STUBS := $(STUB_DIR)/libcuda.so.1 $(STUB_DIR)/libcudart.so $(STUB_DIR)/libcudart_static.a
PROG_SRCS := $(wildcard tests/programs/*.c tests/programs/*.cpp)
PROGS := $(patsubst tests/programs/%,$(B)/tests/programs/%,$(basename $(PROG_SRCS)))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
INTEGS := $(INTEG_SRCS:tests/integration/%.c=$(B)/tests/integration/%)
HARNESS_SRCS := $(wildcard tests/integration/harness*.c)

# A sub-make that builds runs NPROC compilers at once, unless this make runs
# with -j already (then it shares this make's jobs). Expanded in recipes,
# where MAKEFLAGS holds -j.
NPROC := $(shell nproc 2>/dev/null || echo 2)
SUBMAKE_J = $(if $(filter -j%,$(MAKEFLAGS)),,-j$(NPROC))

# Every goal that names no file, in one list (add new ones here).
.PHONY: all deps test-deps test-bins tsan-bins check-bins stand-ins docs format lint clean \
    check check-fast check-san check-tsan check-valgrind check-layers check-scripts check-cuda-abi \
    check-gpu-dry check-golden golden-update report-fields-doc check-install check-real check-aarch64 check-dist check-spdx check-docs docs-check \
    fuzz fuzz-inputs fuzz-smoke fuzz-smoke-inputs demo screenshot bench bench-accuracy bench-callgrind bench-callgrind-sym \
    bench-callgrind-torch ablate \
    install uninstall wheel dist distcheck check-under-load
TOOL_MAIN := $(wildcard tools/main.c)
all: $(B)/libleakwatch.so $(if $(TOOL_MAIN),$(B)/leakwatch)

# The rest, by concern (mk/*.mk): the order matters where one part names
# another's variables in its rules (the stand-ins before the tests).
include mk/deps.mk
include mk/library.mk
include mk/command.mk
include mk/stubs.mk
include mk/tests.mk
include mk/checks.mk
include mk/install.mk
include mk/bench.mk
include mk/aarch64.mk

# Runs every test binary; each prints Check's summary line. LW_BUILD tells the
# integration tests where the library, stand-ins and programs are.
# Under the sanitizer build the preloaded shim needs the ASan runtime loaded
# first: the integration tests put LW_ASAN_RT at the head of LD_PRELOAD.
check-fast: test-bins check-cuda-abi
	@LW_ASAN_RT="$(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so))" \
	    scripts/run-tests.sh $(B) $(UNITS) $(INTEGS)

# The plain suite on a slow machine (issue 45; not in make check, about twice
# check-fast's time): beside a busy loop on every core, then pinned to one
# core (taskset -c 0). A test that waits for a time instead of a state fails
# here. CONTRIBUTING.md says what it found.
check-under-load: test-bins check-cuda-abi
	@scripts/check-under-load.sh $(B) $(UNITS) $(INTEGS)

# ThreadSanitizer build (SAN=thread) of the suites where concurrency is what
# is tested; the rest of the suite runs once in the plain and the ASan builds
# (under TSan it would find nothing new and double the time):
#   test_totals      the per-thread totals shards, filled and summed by many
#                    threads at once (the live table is filled from many
#                    threads by test_safety and test_job_safety);
#   test_sites       the call sites' per-thread count shards: threads that
#                    count and exit while a reader sums, a fork among them;
#   test_safety      fork while eight threads allocate, sixteen threads with
#                    dumps and the sampler, dlsym/dlopen from many threads,
#                    the job's signals and timers;
#   test_job_safety  reports written by the worker, dumps and the exit at
#                    once while a reader watches the file, a forked child's
#                    report clock, thread churn, control clients at the exit,
#                    the symbolizer's children;
#   test_symbols     the symbol cache shared by concurrent report writers,
#                    across threads, unloads and fork, and addr2line's clones.
# Every integration program also runs the worker thread beside the job's.
# Not test_attach: under TSan it skips its busy, raw-thread, signal and
# Python jobs, and an attach into a TSan process fails in ways of its own
# (dlopen faults in the borrowed thread, TSan's fixed stack for it is small).
# The shim needs libtsan preloaded first, as the ASan build needs libasan
# (LW_ASAN_RT). Programs that fork and then start threads (a forked child's
# first CUDA call) are allowed to (die_after_fork=0). TSan's lock-order
# checker holds at most 64 locks per thread, fewer than the fork handlers take
# at once (detect_deadlocks=0). TSan's runtime sleeps in each process at
# exit, atexit_sleep_ms (1000 by default), to let threads still running race
# with the exit: test_safety and test_job_safety start over a hundred
# processes, and the second of each went by asleep (test_safety: 204 s wall
# for 13 s of CPU); 100 ms keeps a window for those races.
# No Python test: CPython is not built with
# TSan, and loading it under libtsan reports the interpreter's own races.
TSAN_B := build/tsan
TSAN_TESTS := tests/unit/test_totals tests/unit/test_sites tests/integration/test_safety \
    tests/integration/test_job_safety tests/integration/test_symbols
tsan-bins: all $(STUBS) $(PROGS) $(B)/examples/train_loop $(addprefix $(B)/,$(TSAN_TESTS))
check-tsan:
	@$(MAKE) --no-print-directory $(SUBMAKE_J) B=$(TSAN_B) SAN=thread tsan-bins
	@LW_ASAN_RT="$(shell $(CC) -print-file-name=libtsan.so)" \
	    TSAN_OPTIONS="halt_on_error=1 exitcode=66 die_after_fork=0 detect_deadlocks=0 atexit_sleep_ms=100" \
	    scripts/run-tests.sh $(TSAN_B) $(addprefix $(TSAN_B)/,$(TSAN_TESTS))

# Our CUDA declarations against the toolkit's, where one is installed.
CUDA_INC := $(firstword $(wildcard $(CUDA_HOME)/include/cuda.h /usr/local/cuda/include/cuda.h))
check-cuda-abi:
ifneq ($(CUDA_INC),)
	@$(CC) -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -Wno-unused-function -Iinclude $(INC_ALL) \
	    -I$(dir $(CUDA_INC)) -fsyntax-only tests/cuda_abi_check.c
	@echo "cuda-abi: include/leakwatch/cuda_api.h agrees with $(CUDA_INC)"
else
	@echo "cuda-abi: no CUDA toolkit (CUDA_HOME or /usr/local/cuda): declarations not compared"
endif

# The suite again, built with AddressSanitizer and UBSan (build/san). Every
# binary runs here as in the plain run, none dropped as a duplicate: each unit
# test links the library's and the command's code built with the sanitizers,
# and each integration test preloads the sanitized shim or runs the
# sanitized command (its text, JSON, HTML and top renderings included: that
# C code is what ASan instruments), so each can show a memory error or
# undefined behaviour the plain run cannot see. The Python sweeps
# (test_python, test_pyframes) keep every CPython: each version takes its own
# branch of src/track/pyframes.c over its own frame layout.
check-san:
	@$(MAKE) --no-print-directory $(SUBMAKE_J) B=build/san SAN=1 test-bins
	@$(MAKE) --no-print-directory B=build/san SAN=1 check-fast

# Every relative link and anchor in README.md, CONTRIBUTING.md, examples/ and
# docs/ points at something that exists; and docs-check.
check-docs: docs-check
	@python3 scripts/check-doc-links.py

# The example lines the docs cite (FILE:LINE, "line N") are the examples'
# leak-line marks, and the outputs they quote (<!-- docs-check: run|shape CMD -->
# before a block) are what a real run of CMD prints, compared on their stable
# parts (place, rate, verdict words), not times or counts. A few seconds.
# And docs/report-fields.md is the report's table of fields written out
# (src/vocab/report_fields.def; make report-fields-doc writes it again).
docs-check: all $(STAND_INS) $(B)/examples/train_loop $(B)/tests/unit/test_report_fields
	@python3 scripts/check-doc-drift.py --build $(B)
	@$(B)/tests/unit/test_report_fields >$(B)/report-fields.log 2>&1 || \
	    { cat $(B)/report-fields.log; echo "docs-check: docs/report-fields.md is not src/vocab/report_fields.def written out: make report-fields-doc"; exit 1; }
	@echo "docs-check: docs/report-fields.md is src/vocab/report_fields.def written out"

# docs/report-fields.md's tables and abbreviations, written again from the
# report's table of fields (src/vocab/report_fields.def); its prose is kept.
report-fields-doc: $(B)/tests/unit/test_report_fields
	@LW_REPORT_FIELDS_WRITE=1 $(B)/tests/unit/test_report_fields

# The real-clients tier (tests/real): Debian trixie's real PyTorch 2.6 (CUDA 12
# build), numba and PyCUDA under build/leakwatch on the CPU stand-ins, in a
# root unpacked once into ~/.cache/leakwatch by scripts/setup-real-clients.sh
# and entered with chroot (scripts/in-real-root.sh: needs root). Fails, with
# the reason, where the clients cannot be had: a skipped tier is not a pass.
# scripts/check-real.sh runs one share of the tests per core at once.
check-real: all $(STUBS)
	@scripts/check-real.sh

# make check builds first, with every core (SUBMAKE_J), what its checks need
# (check-bins); the checks themselves then run one after the other, each
# test runner with its own jobs (scripts/run-tests.sh).
check-bins:
	@mkdir -p $(B) && touch $(B)/.check-start
	@$(MAKE) --no-print-directory $(SUBMAKE_J) all $(STAND_INS) $(DOCS) $(B)/examples/train_loop test-bins \
	    $(FUZZ_INPUT_TARGETS:%=$(B)/fuzz/fuzz_%)

check: test-deps check-bins check-docs check-scripts check-layers check-golden check-fast check-san check-tsan check-valgrind check-install check-gpu-dry fuzz-smoke check-dist check-spdx lint
	@scripts/test-tally.sh --since $(B)/.check-start plain=$(B)/tests/.tally ASan=build/san/tests/.tally \
	    TSan=$(TSAN_B)/tests/.tally

demo: all $(STAND_INS) $(B)/examples/train_loop
	@scripts/demo.sh $(B)

# docs/report-screenshot.png from a real run of make demo's C loop (headless
# Chromium); docs-check fails when the renderer changed after it.
screenshot: all $(STAND_INS) $(B)/examples/train_loop
	@scripts/report-screenshot.sh $(B)

clean:
	rm -rf build
