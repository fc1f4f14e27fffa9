# leakwatch — build, test, install.
#   make            build/libleakwatch.so and build/leakwatch
#   make check      every test (unit, integration, sanitizer build)
#   make demo       run the example workload under the shim on the CPU stand-ins
#   make bench      benchmarks (print numbers, never fail on them)
#   make install PREFIX=/usr/local

PREFIX ?= /usr/local
B ?= build
SAN ?=
CC ?= cc
PKG_CONFIG ?= pkg-config
# Quiet compiles; `make V=1` shows every command.
Q := $(if $(filter 1,$(V)),,@)

WARN := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
BASE_CFLAGS := -std=c11 -D_GNU_SOURCE -g $(WARN) -Iinclude
# Header dependencies, written by the compiler next to each object.
DEPFLAGS := -MMD -MP

# The library's layers (README "Layout"), lowest first. Each folder compiles
# with only its own and the lower layers' headers on the include path, so a
# lower layer cannot even name a higher one; make check-layers checks the
# calls from the objects' symbols.
LAYERS := base track analyze output top hooks
INC_base := -Isrc/base
INC_track := $(INC_base) -Isrc/track
INC_analyze := $(INC_track) -Isrc/analyze
INC_output := $(INC_analyze) -Isrc/output
INC_top := $(INC_output) -Isrc
INC_hooks := $(INC_top) -Isrc/hooks
# A source's layer: its folder under src/, "top" for src/*.c.
layer_of = $(or $(word 2,$(subst /, ,$(dir $(1)))),top)
# Tests and fuzzers see every layer.
INC_ALL := $(INC_hooks)
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
CHECK_CFLAGS := $(shell $(PKG_CONFIG) --cflags check 2>/dev/null)
CHECK_LIBS := $(shell $(PKG_CONFIG) --libs check 2>/dev/null)
LIB_LIBS := -ldl -lunwind -pthread -lm
# The command reads reports with jansson, linked in statically when the static
# library is there, so the installed command (and the wheel) needs no
# libjansson at run time. The shim never links it.
JANSSON_A := $(firstword $(wildcard $(shell $(PKG_CONFIG) --variable=libdir jansson 2>/dev/null)/libjansson.a))
JSON_LIBS := $(if $(JANSSON_A),$(JANSSON_A),-ljansson)

LIB_SRCS := $(wildcard src/*.c src/*/*.c)
LIB_OBJS := $(LIB_SRCS:src/%.c=$(B)/obj/%.o)
TOOL_SRCS := $(filter-out tools/main.c,$(wildcard tools/*.c))
TOOL_OBJS := $(TOOL_SRCS:tools/%.c=$(B)/obj/tools/%.o)

STUB_DIR := $(B)/tests/lib
STUBS := $(STUB_DIR)/libcuda.so.1 $(STUB_DIR)/libcudart.so $(STUB_DIR)/libcudart_static.a
PROG_SRCS := $(wildcard tests/programs/*.c tests/programs/*.cpp)
PROGS := $(patsubst tests/programs/%,$(B)/tests/programs/%,$(basename $(PROG_SRCS)))
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNITS := $(UNIT_SRCS:tests/unit/%.c=$(B)/tests/unit/%)
INTEG_SRCS := $(wildcard tests/integration/test_*.c)
INTEGS := $(INTEG_SRCS:tests/integration/%.c=$(B)/tests/integration/%)
HARNESS_SRCS := $(wildcard tests/integration/harness*.c)

.PHONY: all check check-layers test-deps check-fast check-cuda-abi check-san test-bins demo bench install deps format lint clean fuzz fuzz-smoke
TOOL_MAIN := $(wildcard tools/main.c)
all: $(B)/libleakwatch.so $(if $(TOOL_MAIN),$(B)/leakwatch)

$(B)/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) $(INC_$(call layer_of,$<)) -c $< -o $@

# The command links the base layer only (lw_core is the whole library for the
# tests; the linker takes from it what the command names).
$(B)/obj/tools/%.o: tools/%.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) $(INC_base) -Itools -c $< -o $@

-include $(wildcard $(B)/obj/*.d $(B)/obj/*/*.d)

$(B)/libleakwatch.so: $(LIB_OBJS)
	$(Q)$(CC) -shared -Wl,-soname,libleakwatch.so -Wl,-z,nodelete $(SAN_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(B)/liblw_core.a: $(LIB_OBJS)
	@rm -f $@; ar rcs $@ $^

$(B)/obj/empty.o:
	@mkdir -p $(@D); echo 'typedef int lw_empty_unit;' | $(CC) -x c -c - -o $@

$(B)/liblw_tools.a: $(TOOL_OBJS) $(B)/obj/empty.o
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

$(B)/leakwatch: tools/main.c $(B)/liblw_tools.a $(B)/liblw_core.a
	$(Q)$(CC) $(CFLAGS_LIB) $(INC_base) -Itools -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(JSON_LIBS) $(LIB_LIBS) \
	    -Wl,-rpath,'$$ORIGIN'

# ---- CPU stand-ins for the CUDA libraries (tests only) ----
STUB_CFLAGS := $(BASE_CFLAGS) -O1 -fPIC -pthread
$(STUB_DIR)/libcuda.so.1: tests/stubs/fake_cuda.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $< -ldl
	ln -sf libcuda.so.1 $(STUB_DIR)/libcuda.so
$(STUB_DIR)/libcudart.so: tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,libcudart.so -o $@ $< -ldl -pthread
$(STUB_DIR)/libcudart_static.a: tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(B)/obj/stubs $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -fvisibility=hidden -DLW_FAKE_CUDART_STATIC -c $< -o $(B)/obj/stubs/fake_cudart_static.o
	@rm -f $@; ar rcs $@ $(B)/obj/stubs/fake_cudart_static.o
# A driver without cuGetProcAddress*, as before CUDA 11.3: the runtime must fall
# back to dlsym by versioned name. Used through LD_LIBRARY_PATH=$(B)/tests/lib-legacy.
LEGACY_STUB_DIR := $(B)/tests/lib-legacy
$(LEGACY_STUB_DIR)/libcuda.so.1: tests/stubs/fake_cuda.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -DLW_FAKE_CUDA_NO_PROC_ADDRESS -shared -Wl,-soname,libcuda.so.1 -o $@ $< -ldl
STUBS += $(LEGACY_STUB_DIR)/libcuda.so.1

$(STUB_DIR)/libnextprobe.so: tests/integration/next_probe_lib.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -o $@ $< -ldl
STUBS += $(STUB_DIR)/libnextprobe.so

# Test programs: the name's prefix says how each reaches CUDA.
#   rt_*     links the (fake) runtime dynamically      drv_*   links libcuda.so.1 directly
#   static_* links the runtime statically (cudart_static)  plain_* no CUDA at all
#   py_*     (none compiled here)
PROG_CFLAGS := $(BASE_CFLAGS) -O0 -fno-omit-frame-pointer -fno-inline -rdynamic -pthread
$(B)/tests/programs/rt_%: tests/programs/rt_%.c $(wildcard tests/programs/*.h) $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(STUB_DIR) -lcudart -Wl,-rpath,'$$ORIGIN/../lib'
$(B)/tests/programs/drv_%: tests/programs/drv_%.c $(wildcard tests/programs/*.h) $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(STUB_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN/../lib' -ldl
$(B)/tests/programs/static_%: tests/programs/static_%.c $(wildcard tests/programs/*.h) $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< $(STUB_DIR)/libcudart_static.a -ldl -Wl,-rpath,'$$ORIGIN/../lib'
$(B)/tests/programs/plain_%: tests/programs/plain_%.c
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $<
# cxx_*: C++ through the runtime, optimised (-O1) so that names, inlined
# frames and lines are what a real build gives the symboliser.
$(B)/tests/programs/cxx_%: tests/programs/cxx_%.cpp $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CXX) -g -O1 -Wall -Wextra -Werror -fno-omit-frame-pointer -rdynamic -pthread -o $@ $< \
	    -L$(STUB_DIR) -lcudart -Wl,-rpath,'$$ORIGIN/../lib'

# ---- tests (Check) ----
$(B)/tests/unit/%: tests/unit/%.c $(B)/liblw_tools.a $(B)/liblw_core.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) -Itools -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a \
	    $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)
$(B)/tests/integration/%: tests/integration/%.c $(HARNESS_SRCS) $(wildcard tests/integration/*.h) $(B)/liblw_tools.a $(B)/liblw_core.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) -Itools -Itests/integration -o $@ $< $(HARNESS_SRCS) \
	    $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)

test-bins: all $(STUBS) $(PROGS) $(UNITS) $(INTEGS)

# Python frame probe: loaded with ctypes by tests/python/check_pyframes.py,
# which tests/unit/test_pyframes runs under every CPython >= 3.8 found.
$(B)/tests/python/pyprobe.so: tests/python/pyprobe.c src/track/pyframes.c $(wildcard src/track/*.h src/base/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_track) $(OPT) -fPIC -shared -pthread -o $@ tests/python/pyprobe.c \
	    src/track/pyframes.c $(SAN_LDFLAGS) -ldl
test-bins: $(B)/tests/python/pyprobe.so

# Runs every test binary; each prints Check's summary line. LW_BUILD tells the
# integration tests where the library, stand-ins and programs are.
# Under the sanitizer build the preloaded shim needs the ASan runtime loaded
# first: the integration tests put LW_ASAN_RT at the head of LD_PRELOAD.
check-fast: test-bins check-cuda-abi
	@LW_ASAN_RT="$(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so))" \
	    scripts/run-tests.sh $(B) $(UNITS) $(INTEGS)

# ThreadSanitizer build of the suite (SAN=thread). The shim needs libtsan
# preloaded first, as the ASan build needs libasan (LW_ASAN_RT). Programs that
# fork and then start threads (a forked child's first CUDA call) are allowed
# to (die_after_fork=0). TSan's lock-order checker holds at most 64 locks per
# thread, fewer than the fork handlers take at once (detect_deadlocks=0). The
# Python tests are left out: CPython is not built with TSan, and loading it
# under libtsan reports the interpreter's own races.
TSAN_B := build/tsan
TSAN_SKIP := %/test_python %/test_pyframes
check-tsan:
	@$(MAKE) --no-print-directory B=$(TSAN_B) SAN=thread test-bins
	@echo "check-tsan: skipped under TSan (CPython is not built with it): $(notdir $(filter $(TSAN_SKIP),$(UNITS) $(INTEGS)))"
	@LW_ASAN_RT="$(shell $(CC) -print-file-name=libtsan.so)" \
	    TSAN_OPTIONS="halt_on_error=1 exitcode=66 die_after_fork=0 detect_deadlocks=0" \
	    scripts/run-tests.sh $(TSAN_B) $(patsubst $(B)/%,$(TSAN_B)/%,$(filter-out $(TSAN_SKIP),$(UNITS) $(INTEGS)))

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

# A few programs under valgrind with the shim preloaded (tests/valgrind.supp
# documents the suppressions).
check-valgrind: all $(STUBS) $(PROGS)
	@scripts/check-valgrind.sh $(B)

check-san:
	@$(MAKE) --no-print-directory B=build/san SAN=1 check-fast

# No lower layer calls a higher one (scripts/check-layers.sh reads the objects).
check-layers: all
	@scripts/check-layers.sh $(B)

check: test-deps check-layers check-fast check-san check-tsan check-valgrind fuzz-smoke check-dist lint

demo: all $(STUBS) $(B)/examples/train_loop
	@scripts/demo.sh $(B)

bench: all $(STUBS) $(PROGS)
	@scripts/bench.sh $(B)

install: all
	install -d $(DESTDIR)$(PREFIX)/lib $(DESTDIR)$(PREFIX)/include/leakwatch $(DESTDIR)$(PREFIX)/bin
	install -m 0755 $(B)/libleakwatch.so $(DESTDIR)$(PREFIX)/lib/
	install -m 0755 $(B)/leakwatch $(DESTDIR)$(PREFIX)/bin/
	install -m 0644 include/leakwatch.h $(DESTDIR)$(PREFIX)/include/
	# The Python package and its auto-start, where the library looks for them
	# (lib/../share/leakwatch/python; src/torch_mode.c).
	install -d $(DESTDIR)$(PREFIX)/share/leakwatch/python/leakwatch/_autostart
	install -m 0644 python/leakwatch/*.py $(DESTDIR)$(PREFIX)/share/leakwatch/python/leakwatch/
	install -m 0644 python/leakwatch/_autostart/sitecustomize.py \
	    $(DESTDIR)$(PREFIX)/share/leakwatch/python/leakwatch/_autostart/

# ---- fuzzing (clang + libFuzzer) ----
FUZZ_CC ?= clang
FUZZ_SECONDS ?= 60
FUZZ_SMOKE_SECONDS ?= 10
FUZZ_CFLAGS := -std=c11 -D_GNU_SOURCE -g -O1 $(WARN) -fsanitize=fuzzer,address,undefined \
    -fno-sanitize-recover=undefined
# `make fuzz` runs each target for FUZZ_SECONDS; `make check` runs each briefly
# (fuzz-smoke). Reports are read with jansson, fuzzed upstream (OSS-Fuzz).
# The settings' parser and the report path's template: the environment is
# input leakwatch does not control.
FUZZ_LIB_CFLAGS := $(FUZZ_CFLAGS) -Iinclude $(INC_base)
$(B)/fuzz/fuzz_option_parse: tests/fuzz/fuzz_option_parse.c src/base/options.c src/base/log.c src/base/options.h
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -o $@ $< src/base/options.c src/base/log.c
$(B)/fuzz/fuzz_expand_path: tests/fuzz/fuzz_expand_path.c src/base/path_template.c src/base/path_template.h
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -o $@ $< src/base/path_template.c
FUZZ_INPUT_TARGETS := option_parse expand_path
fuzz-inputs: $(FUZZ_INPUT_TARGETS:%=$(B)/fuzz/fuzz_%)
	@for t in $(FUZZ_INPUT_TARGETS); do mkdir -p $(B)/fuzz/corpus_$$t; \
	    $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_SECONDS) -max_len=4200 $(B)/fuzz/corpus_$$t || exit 1; done
fuzz: fuzz-inputs
fuzz-smoke: fuzz-smoke-inputs
fuzz-smoke-inputs: $(FUZZ_INPUT_TARGETS:%=$(B)/fuzz/fuzz_%)
	@for t in $(FUZZ_INPUT_TARGETS); do mkdir -p $(B)/fuzz/corpus_$$t; \
	    $(B)/fuzz/fuzz_$$t -max_total_time=$(FUZZ_INPUT_SMOKE_SECONDS) -max_len=4200 $(B)/fuzz/corpus_$$t \
	    >$(B)/fuzz/$$t.log 2>&1 || { tail -40 $(B)/fuzz/$$t.log; exit 1; }; \
	    echo "fuzz: $$t ran $(FUZZ_INPUT_SMOKE_SECONDS) s clean"; done
FUZZ_INPUT_SMOKE_SECONDS ?= 5
.PHONY: fuzz-inputs fuzz-smoke-inputs check-tsan check-valgrind

# Build dependencies: installed once when missing (root or sudo), else one message.
# The tests' tools (clang's libFuzzer, valgrind, cppcheck, ...) only for make check.
deps: $(B)/.deps-ok
$(B)/.deps-ok: scripts/install-deps.sh
	@scripts/install-deps.sh build
	@mkdir -p $(B) && touch $@
test-deps: $(B)/.test-deps-ok
$(B)/.test-deps-ok: scripts/install-deps.sh
	@scripts/install-deps.sh test
	@mkdir -p $(B) && touch $@

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
lint:
	@if ! command -v clang-format >/dev/null || ! command -v cppcheck >/dev/null; then \
	    echo "lint: clang-format or cppcheck missing: skipped"; exit 0; fi; \
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && \
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance --inline-suppr \
	    --suppress=missingIncludeSystem -D_GNU_SOURCE -Iinclude $(INC_ALL) src tools && \
	echo "lint: clang-format and cppcheck clean"

clean:
	rm -rf build

# ---- release ----
# make dist: build/leakwatch-VERSION.tar.gz, reproducible (scripts/dist.sh).
# make distcheck: unpacks it on its own and runs its whole make check.
# check-dist (in make check): reproducible, the tracked files, and the
# unpacked tree builds and passes its unit tests.
.PHONY: dist distcheck check-dist check-spdx
dist:
	@scripts/dist.sh $(B)
distcheck:
	@scripts/check-dist.sh $(B) full
check-dist:
	@scripts/check-dist.sh $(B)
# Every source file carries SPDX-License-Identifier: Apache-2.0.
check-spdx:
	@scripts/check-spdx.sh .

# ---- benchmarks (make bench; owned by bench/perf) ----
# rt_bench: the timed workloads, linked against the CPU stand-ins like the
# rt_* test programs, but optimised as a real caller would be. bench/lib holds
# a lock-free runtime stand-in for the thread-scaling rows (see its source).
BENCH_CFLAGS := $(BASE_CFLAGS) -O2 -fno-omit-frame-pointer -pthread
$(B)/bench/rt_bench: bench/perf/rt_bench.c include/leakwatch/cuda_api.h $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $< -L$(STUB_DIR) -lcudart -Wl,-rpath,'$$ORIGIN/../tests/lib' -ldl -lunwind
$(B)/bench/lib/libcudart.so: bench/perf/fast_cudart.c include/leakwatch/cuda_api.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so -o $@ $< -ldl
bench: $(B)/bench/rt_bench $(B)/bench/lib/libcudart.so

# ---- examples ----
$(B)/examples/train_loop: examples/train_loop.c $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(STUB_DIR) -lcudart -ldl -Wl,-rpath,'$$ORIGIN/../tests/lib'
test-bins: $(B)/examples/train_loop

# ---- accuracy benchmark of the leak detector (make bench-accuracy; owned by bench/accuracy) ----
# Runs the corpus of simulated training jobs (tests/programs/rt_workload.c,
# bench/accuracy/corpus.txt) under the shim; prints a confusion matrix, the
# rate errors and the steps to a verdict. Options: ACCURACY_ARGS="--only NAME -v".
.PHONY: bench-accuracy
bench-accuracy: $(B)/libleakwatch.so $(STUBS) $(B)/tests/programs/rt_workload
	@scripts/bench-accuracy.sh $(B) $(ACCURACY_ARGS)
bench: bench-accuracy
