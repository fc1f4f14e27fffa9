# SPDX-License-Identifier: Apache-2.0
# The checks make check runs beside the test suite: valgrind, the layers,
# the scripts' tests, the renderers' golden files, the GPU check dry, the
# real clients, the fuzzers, format and lint (check-docs is in the
# Makefile, beside check:).

# A few programs under valgrind with the shim preloaded (tests/valgrind.supp
# documents the suppressions).
check-valgrind: all $(STUBS) $(PROGS)
	@scripts/check-valgrind.sh $(B)

# No lower layer calls a higher one (scripts/check-layers.sh reads the objects).
# It reads every object under $(B)/obj: the objects of sources that have moved
# or gone (a file renamed, a layer split) are removed first, else an old copy
# would count as a second definition in another layer.
OBJ_DIRS := $(B)/obj $(addprefix $(B)/obj/,$(LAYERS) tools $(TOOL_DIRS:%=tools/%))
STALE_OBJS = $(filter-out $(LIB_OBJS) $(TOOL_OBJS) $(B)/obj/empty.o,$(wildcard $(OBJ_DIRS:%=%/*.o)))
check-layers: all
	$(if $(STALE_OBJS),@rm -f $(STALE_OBJS) $(STALE_OBJS:.o=.d))
	@scripts/check-layers.sh $(B)
	@scripts/check-static-tls.sh $(B)/libleakwatch.so

# The test scripts' own tests (tests/scripts: scripts/run-tests.sh's tally).
check-scripts:
	@for t in tests/scripts/test-*.sh; do $$t || exit 1; done

# The golden files of the command's renderers (tests/tools/golden/run.sh):
# `leakwatch report` in every format and mode on fixed report inputs, its
# output compared byte for byte with tests/tools/golden/expected. A renderer
# whose output changes fails here; when the change is meant, golden-update
# writes the expected files again and prints their diff (read it, commit).
check-golden: all
	@tests/tools/golden/run.sh $(B) check
golden-update: all
	@tests/tools/golden/run.sh $(B) update

# The GPU check (tests/gpu/check.py) end to end on the CPU stand-ins and the
# stand-in torch (tests/python/faketorch): everything but the GPU. ~20 s.
check-gpu-dry: all $(STAND_INS)
	@rm -rf $(B)/gpu-dry
	@tests/gpu/run.sh --dry-run --build $(B) --out $(B)/gpu-dry --budget 240 >$(B)/gpu-dry.log 2>&1 || \
	    { cat $(B)/gpu-dry.log; echo "check-gpu-dry: FAILED (results in $(B)/gpu-dry)"; exit 1; }
	@echo "check-gpu-dry: the GPU check ran on the stand-ins ($$(tail -1 $(B)/gpu-dry.log))"

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
$(B)/fuzz/fuzz_option_parse: tests/fuzz/fuzz_option_parse.c src/base/options.c src/base/log.c src/base/sig_guard.c src/base/rank.c src/base/options.h
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -o $@ $< src/base/options.c src/base/log.c src/base/sig_guard.c src/base/rank.c
$(B)/fuzz/fuzz_expand_path: tests/fuzz/fuzz_expand_path.c src/base/path_template.c src/base/path_template.h src/base/rank.c
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -o $@ $< src/base/path_template.c src/base/rank.c
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

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
# A missing tool fails the check (scripts/install-deps.sh test installs both).
lint:
	@for t in clang-format cppcheck; do command -v $$t >/dev/null 2>&1 || \
	    { echo "lint: FAILED: $$t is not installed (Debian package $$t; scripts/install-deps.sh test installs it)"; exit 1; }; done; \
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && \
	cppcheck -j$(NPROC) --quiet --error-exitcode=1 --enable=warning,portability,performance --inline-suppr \
	    --suppress=missingIncludeSystem -D_GNU_SOURCE -Iinclude $(INC_ALL) $(TOOL_INC) src tools && \
	echo "lint: clang-format and cppcheck clean"
