# SPDX-License-Identifier: Apache-2.0
# Benchmarks and the example program (make demo is in the Makefile, beside check:).

bench: all $(STUBS) $(PROGS)
	@scripts/bench.sh $(B)

# ---- benchmarks (make bench; owned by bench/perf) ----
# rt_bench: the timed workloads, linked against the CPU stand-ins like the
# rt_* test programs, but optimised as a real caller would be. bench/lib holds
# a lock-free runtime stand-in for the thread-scaling rows (see its source).
BENCH_CFLAGS := $(BASE_CFLAGS) -O2 -fno-omit-frame-pointer -pthread
$(B)/bench/rt_bench: bench/perf/rt_bench.c include/leakwatch/cuda_api.h $(STUBS) | $(B)/.test-libs-ok
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -o $@ $< -L$(STUB_DIR) -lcudart -Wl,-rpath,'$$ORIGIN/../tests/lib' -ldl -lunwind
$(B)/bench/lib/libcudart.so: bench/perf/fast_cudart.c include/leakwatch/cuda_api.h
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so -o $@ $< -ldl
# py_ext.so: pairs made by C code under Python frames (py_bench.py, LW_PY_EXT).
$(B)/bench/py_ext.so: bench/perf/py_ext.c include/leakwatch/cuda_api.h $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BENCH_CFLAGS) -fPIC -shared -o $@ $< -L$(STUB_DIR) -lcudart -Wl,-rpath,'$$ORIGIN/../tests/lib'
bench: $(B)/bench/rt_bench $(B)/bench/lib/libcudart.so $(B)/bench/py_ext.so
# Instructions the shim adds per cudaMalloc+cudaFree pair under Python frames
# (valgrind's callgrind; bench/perf/callgrind_py.sh, docs/cost.md). Not part of
# make bench (minutes under valgrind). CALLGRIND_ARGS: interpreters to use;
# LW_CG_PARTS=1 also says where the instructions go.
bench-callgrind: all $(STUBS) $(B)/bench/py_ext.so
	@bench/perf/callgrind_py.sh $(B) $(CALLGRIND_ARGS)
# A first report's symbolisation, by instructions (bench/perf/callgrind_sym.sh):
# N return addresses inside a large library, named through the shared cache.
# libmanysyms.so: a generated stand-in for a large C++ library (20,000
# exported functions, each with a static one: 40,000 in .symtab).
$(B)/bench/sym_bench: bench/perf/sym_bench.c src/output/symbolize.h $(B)/liblw_core.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_output) -O2 -o $@ $< $(B)/liblw_core.a $(SAN_LDFLAGS) $(LIB_LIBS)
$(B)/bench/manysyms.c: bench/perf/gen_manysyms.py
	@mkdir -p $(@D)
	$(Q)python3 $< 20000 >$@
$(B)/bench/lib/libmanysyms.so: $(B)/bench/manysyms.c
	@mkdir -p $(@D)
	$(Q)$(CC) -O0 -fPIC -shared -o $@ $<
bench-callgrind-sym: $(B)/bench/sym_bench $(B)/bench/lib/libmanysyms.so
	@bench/perf/callgrind_sym.sh $(B) $(SYM_BASE)
bench-callgrind: bench-callgrind-sym
# Instructions leakwatch adds to a step of real PyTorch 2.6 (the real-torch
# training loop on the stand-ins, bench/perf/callgrind_torch.sh): the steady
# measure beside make bench's timed realtorch rows. Minutes under valgrind;
# needs the real-clients root (root). LW_CG_PARTS=1, LW_CG_LOOPS="train steady".
bench-callgrind-torch: all $(STUBS)
	@bench/perf/callgrind_torch.sh $(B)
# The library with one part of the allocation path removed, to measure what
# that part costs: build/ablate-NAME/libleakwatch.so, then
#   bench/perf/compare.sh build build/libleakwatch.so build/ablate-NAME/libleakwatch.so
# NAME: unwind (a fixed 36-frame stack instead of unwinding), python (no
# Python frames), site (one site for every stack, found without a lookup).
ablate:
	@case "$(ABLATE)" in unwind|python|site) ;; \
	  *) echo "make ablate ABLATE=unwind|python|site"; exit 2 ;; esac
	@$(MAKE) --no-print-directory B=build/ablate-$(ABLATE) ABLATE=$(ABLATE) all

# eval_bench: one flat series' evaluations, counted with callgrind
# (bench/perf/eval_bench.c; docs/cost.md). Not part of make bench.
$(B)/bench/eval_bench: bench/perf/eval_bench.c $(B)/liblw_core.a
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_analyze) -O2 -o $@ $< $(B)/liblw_core.a $(LIB_LIBS)

# ---- examples ----
$(B)/examples/train_loop: examples/train_loop.c $(STUBS)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -L$(STUB_DIR) -lcudart -ldl -Wl,-rpath,'$$ORIGIN/../tests/lib'
test-bins: $(B)/examples/train_loop

# ---- accuracy benchmark of the leak detector (make bench-accuracy; owned by bench/accuracy) ----
# Runs the corpus of simulated training jobs (tests/programs/rt_workload.c,
# bench/accuracy/corpus.txt) under the shim; prints a confusion matrix, the
# rate errors and the steps to a verdict. Options: ACCURACY_ARGS="--only NAME -v".
# Then the noise sweep (bench/accuracy/sweep.c): synthetic noisy floors fed
# straight into the series and detector code, no shim (SWEEP_ARGS="--seeds 20").
$(B)/bench/sweep: bench/accuracy/sweep.c src/analyze/detector.c src/analyze/series.c src/analyze/stats.c src/vocab/verdict.c \
                  $(wildcard src/analyze/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_analyze) -O2 -o $@ $(filter %.c,$^) -lm
bench-accuracy: $(B)/libleakwatch.so $(STUBS) $(B)/tests/programs/rt_workload $(B)/bench/sweep
	@scripts/bench-accuracy.sh $(B) $(ACCURACY_ARGS)
	@$(B)/bench/sweep $(SWEEP_ARGS)
bench: bench-accuracy
