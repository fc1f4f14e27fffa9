# SPDX-License-Identifier: Apache-2.0
# leakwatch — build, test, install.
#   make            build/libleakwatch.so and build/leakwatch
#   make check      every test (unit, integration, sanitizer build)
#   make demo       run the example workload under the shim on the CPU stand-ins
#   make bench      benchmarks (print numbers, never fail on them)
#   make install PREFIX=/usr/local   (make uninstall PREFIX=... removes it again)
#   make wheel      the Python package (pip install . does the same; see pyproject.toml)

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
# the code epoch.
LAYERS := base vocab loader track analyze output top hooks
INC_base := -Isrc/base
INC_vocab := $(INC_base) -Isrc/vocab
INC_loader := $(INC_vocab) -Isrc/loader
INC_track := $(INC_loader) -Isrc/track
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

# Every goal that names no file, in one list (add new ones here).
.PHONY: all deps test-deps test-bins tsan-bins stand-ins docs format lint clean \
    check check-fast check-san check-tsan check-valgrind check-layers check-scripts check-cuda-abi \
    check-gpu-dry check-install check-real check-aarch64 check-dist check-spdx check-docs docs-check \
    fuzz fuzz-inputs fuzz-smoke fuzz-smoke-inputs demo bench bench-accuracy ablate \
    install uninstall wheel dist distcheck
TOOL_MAIN := $(wildcard tools/main.c)
all: $(B)/libleakwatch.so $(if $(TOOL_MAIN),$(B)/leakwatch)

# The version, in one place: the VERSION file. The C code gets it through the
# generated leakwatch/version.h (LEAKWATCH_VERSION), the Python package from
# the wheel's build (python/backend) or make install (_version.py).
VERSION := $(shell cat VERSION)
VERSION_H := $(B)/include/leakwatch/version.h
$(VERSION_H): VERSION
	@mkdir -p $(@D)
	@echo '$(VERSION)' | grep -Eqx '[0-9]+\.[0-9]+\.[0-9]+(\.?(a|b|rc|dev|post)[0-9]+)?' || \
	    { echo "VERSION: '$(VERSION)' is not a version such as 1.2.3, 1.2.3rc1 or 1.2.3.dev4"; exit 1; }
	@printf '/* Generated by make from the VERSION file: edit that instead. */\n#define LEAKWATCH_VERSION "%s"\n' \
	    '$(VERSION)' >$@

$(B)/obj/%.o: src/%.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) $(INC_$(call layer_of,$<)) -c $< -o $@

# The command links the base and vocab layers only (lw_core is the whole
# library for the tests; the linker takes from it what the command names).
$(B)/obj/tools/%.o: tools/%.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(CFLAGS_LIB) $(DEPFLAGS) $(INC_vocab) $(TOOL_INC) -I$(B)/gen -c $< -o $@

# The HTML page's CSS and markup, kept as files in tools/render/templates/ and
# built into the command.
TEMPLATES := $(wildcard tools/render/templates/*)
$(B)/gen/lw_templates.h: $(TEMPLATES) scripts/embed.sh
	@mkdir -p $(@D)
	$(Q)scripts/embed.sh $@ report_css=tools/render/templates/report.css \
	    page_head=tools/render/templates/page_head.html page_foot=tools/render/templates/page_foot.html
$(B)/obj/tools/render/render_html.o: $(B)/gen/lw_templates.h

-include $(wildcard $(B)/obj/*.d $(B)/obj/*/*.d $(B)/obj/*/*/*.d)

$(B)/libleakwatch.so: $(LIB_OBJS)
	$(Q)$(CC) -shared -Wl,-soname,libleakwatch.so -Wl,-z,nodelete $(SAN_LDFLAGS) -o $@ $^ $(LIB_LIBS)

$(B)/liblw_core.a: $(LIB_OBJS)
	@rm -f $@; ar rcs $@ $^

$(B)/obj/empty.o:
	@mkdir -p $(@D); echo 'typedef int lw_empty_unit;' | $(CC) -x c -c - -o $@

$(B)/liblw_tools.a: $(TOOL_OBJS) $(B)/obj/empty.o
	@mkdir -p $(@D); rm -f $@; ar rcs $@ $^

$(LIB_OBJS) $(TOOL_OBJS): $(VERSION_H)

$(B)/leakwatch: tools/main.c $(B)/liblw_tools.a $(B)/liblw_core.a $(VERSION_H)
	$(Q)$(CC) $(CFLAGS_LIB) $(INC_vocab) $(TOOL_INC) -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(JSON_LIBS) $(LIB_LIBS) \
	    -Wl,-rpath,'$$ORIGIN'

# The man page and the bash completion, generated from the command's own
# --help texts (and its table of LEAKWATCH_* variables), so they cannot drift.
DOCS := $(B)/doc/leakwatch.1 $(B)/doc/leakwatch.bash
docs: $(DOCS)
$(B)/doc/leakwatch.1: $(B)/leakwatch scripts/gen-docs.sh VERSION
	@mkdir -p $(@D)
	$(Q)scripts/gen-docs.sh man $(B)/leakwatch >$@.tmp && mv $@.tmp $@
$(B)/doc/leakwatch.bash: $(B)/leakwatch scripts/gen-docs.sh
	@mkdir -p $(@D)
	$(Q)scripts/gen-docs.sh bash $(B)/leakwatch >$@.tmp && mv $@.tmp $@

# ---- CPU stand-ins for the CUDA libraries (tests only) ----
STUB_CFLAGS := $(BASE_CFLAGS) -O1 -fPIC -pthread
# The driver is two sources: fake_cuda.c (the memory and context model the
# hooks are tested against) and fake_cuda_clients.c (the rest of the API that
# real clients, numba and PyCUDA, look up or link).
FAKE_CUDA_SRCS := tests/stubs/fake_cuda.c tests/stubs/fake_cuda_clients.c
$(STUB_DIR)/libcuda.so.1: $(FAKE_CUDA_SRCS) $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_CUDA_SRCS) -ldl
	ln -sf libcuda.so.1 $(STUB_DIR)/libcuda.so
# Versioned symbols, as the real runtime's (cudaMalloc@@libcudart.so.13).
$(STUB_DIR)/libcudart.so: tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D) $(B)/obj/stubs
	@printf 'libcudart.so.13 { global: *; };\n' > $(B)/obj/stubs/cudart13.map
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,libcudart.so -Wl,--version-script,$(B)/obj/stubs/cudart13.map \
	    -o $@ $< -ldl -pthread
# A second runtime of another soname and version, for two runtimes in one process.
$(STUB_DIR)/libcudart.so.12: tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D) $(B)/obj/stubs
	@printf 'libcudart.so.12 { global: *; };\n' > $(B)/obj/stubs/cudart12.map
	$(Q)$(CC) $(STUB_CFLAGS) -DFAKE_CUDART_VERSION=12080 '-DFAKE_CUDART_NAME="libcudart.so.12"' -shared \
	    -Wl,-soname,libcudart.so.12 -Wl,--version-script,$(B)/obj/stubs/cudart12.map -o $@ $< -ldl -pthread
STUBS += $(STUB_DIR)/libcudart.so.12
# The rest of the CUDA 12 stack that Debian's real PyTorch 2.6 loads (make
# check-real): cuBLAS/cuBLASLt stand-ins, and loader stand-ins for cuDNN 9,
# cuFFT, cuRAND, cuSPARSE, cuSOLVER, NCCL, nvToolsExt and NVRTC, one weak
# function per symbol of the committed list tests/stubs/cuda12/<soname>.syms
# (nm -D --undefined-only of the real clients' ELF files; the build does not
# need them). Symbols carry the soname as version, as PyTorch's references
# require (readelf -V), except NCCL's, which PyTorch references unversioned.
# What an unimplemented function answers: the library's "not supported"
# status (cuBLAS and nvToolsExt: success, doing nothing).
CUDA12_LIBS := libcublas.so.12 libcublasLt.so.12 libcudnn.so.9 libcufft.so.11 libcurand.so.10 \
    libcusparse.so.12 libcusolver.so.11 libnccl.so.2 libnvToolsExt.so.1 libnvrtc.so.12
CUDA12_STUBS := $(addprefix $(STUB_DIR)/,$(CUDA12_LIBS))
STUB_RESULT_libcudnn.so.9 := 3000
STUB_RESULT_libcufft.so.11 := 16
STUB_RESULT_libcurand.so.10 := 999
STUB_RESULT_libcusparse.so.12 := 10
STUB_RESULT_libcusolver.so.11 := 15
STUB_RESULT_libnccl.so.2 := 5
STUB_RESULT_libnvrtc.so.12 := 11
$(CUDA12_STUBS): $(STUB_DIR)/%: tests/stubs/cuda12/%.syms tests/stubs/fake_stub_syms.c tests/stubs/fake_cuda12_libs.c | deps
	@mkdir -p $(@D) $(B)/obj/stubs
	@sed 's/^\([A-Za-z_][A-Za-z0-9_]*\)$$/FAKE_STUB(\1)/' $< > $(B)/obj/stubs/$*.inc
	@printf '%s { global: *; };\n' '$*' > $(B)/obj/stubs/$*.map
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,$* \
	    $(if $(filter libnccl.so.2,$*),,-Wl,--version-script,$(B)/obj/stubs/$*.map) \
	    -DFAKE_LIB_$(subst .,_,$*) -DFAKE_STUB_RESULT=$(or $(STUB_RESULT_$*),0) \
	    '-DFAKE_STUB_SYMS="$(abspath $(B)/obj/stubs/$*.inc)"' \
	    -o $@ tests/stubs/fake_stub_syms.c tests/stubs/fake_cuda12_libs.c
STUBS += $(CUDA12_STUBS)
$(STUB_DIR)/libcudart_static.a: tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(B)/obj/stubs $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -fvisibility=hidden -DLW_FAKE_CUDART_STATIC -c $< -o $(B)/obj/stubs/fake_cudart_static.o
	@rm -f $@; ar rcs $@ $(B)/obj/stubs/fake_cudart_static.o
# A driver without cuGetProcAddress*, as before CUDA 11.3: the runtime must fall
# back to dlsym by versioned name. Used through LD_LIBRARY_PATH=$(B)/tests/lib-legacy.
LEGACY_STUB_DIR := $(B)/tests/lib-legacy
$(LEGACY_STUB_DIR)/libcuda.so.1: $(FAKE_CUDA_SRCS) $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -DLW_FAKE_CUDA_NO_PROC_ADDRESS -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_CUDA_SRCS) -ldl
STUBS += $(LEGACY_STUB_DIR)/libcuda.so.1

# A driver whose cuGetProcAddress hands out its exported (interposable)
# functions: LD_LIBRARY_PATH=$(B)/tests/lib-interposable.
INTERPOSABLE_STUB_DIR := $(B)/tests/lib-interposable
$(INTERPOSABLE_STUB_DIR)/libcuda.so.1: $(FAKE_CUDA_SRCS) $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -DLW_FAKE_CUDA_INTERPOSABLE -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_CUDA_SRCS) -ldl
STUBS += $(INTERPOSABLE_STUB_DIR)/libcuda.so.1

# A CUDA 12.8 driver (LD_LIBRARY_PATH=$(B)/tests/lib-cuda12:$(B)/tests/lib): what
# real numba 0.61 needs. Its ctypes binding looks every function up by name,
# the "_v2" one first, and calls cuCtxGetDevice_v2 (CUDA 13's two-argument
# function) with one argument where a CUDA 13 driver exports it; a CUDA 12
# driver does not, so it gets the one-argument cuCtxGetDevice.
CUDA12_STUB_DIR := $(B)/tests/lib-cuda12
$(CUDA12_STUB_DIR)/libcuda.so.1: $(FAKE_CUDA_SRCS) $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	@printf '{ global: *; local: cuCtxGetDevice_v2; };\n' > $(@D)/cuda12.map
	$(Q)$(CC) $(STUB_CFLAGS) -DFAKE_DRIVER_VERSION=12080 -shared -Wl,-soname,libcuda.so.1 \
	    -Wl,--version-script,$(@D)/cuda12.map -o $@ $(FAKE_CUDA_SRCS) -ldl
	ln -sf libcuda.so.1 $(@D)/libcuda.so
STUBS += $(CUDA12_STUB_DIR)/libcuda.so.1

# Layout modules (tests/modules/mod_layout.c), opened by dl_* programs as
# Python opens extension modules; and a second interposer.
MOD_CFLAGS := $(STUB_CFLAGS) -O0 -fno-omit-frame-pointer -fno-inline -Itests/stubs
MOD_DEPS := tests/modules/mod_layout.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h
$(STUB_DIR)/libmod_rt.so: $(MOD_DEPS) $(STUB_DIR)/libcudart.so
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME -DMOD_FAKE_RT -shared -o $@ $< -L$(STUB_DIR) -lcudart -ldl -Wl,-rpath,'$$ORIGIN'
$(STUB_DIR)/libmod_rt12.so: $(MOD_DEPS) $(STUB_DIR)/libcudart.so.12
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME -DMOD_FAKE_RT '-DLIB_NAME="libcudart.so.12"' -shared -o $@ $< $(STUB_DIR)/libcudart.so.12 -ldl -Wl,-rpath,'$$ORIGIN'
$(STUB_DIR)/libmod_static.so: $(MOD_DEPS) $(STUB_DIR)/libcudart_static.a
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME -DMOD_FAKE_RT -shared -o $@ $< $(STUB_DIR)/libcudart_static.a -ldl -pthread
$(STUB_DIR)/libmod_drv.so: $(MOD_DEPS) $(STUB_DIR)/libcuda.so.1
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_DRIVER -shared -o $@ $< -L$(STUB_DIR) -l:libcuda.so.1 -ldl -Wl,-rpath,'$$ORIGIN'
$(STUB_DIR)/libinterposer.so: tests/modules/interposer.c $(wildcard tests/stubs/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -Itests/stubs -shared -o $@ $< -ldl
LAYOUT_MODS := $(addprefix $(STUB_DIR)/,libmod_rt.so libmod_rt12.so libmod_static.so libmod_drv.so libinterposer.so)

# Tail-call modules (tests/modules/mod_tail.c), optimised as real extension
# modules are: their wrappers end in `jmp cudaMalloc@PLT` (the test checks),
# so the runtime's return address lies in their caller. libmod_tailno.so makes
# ordinary calls, for comparison.
TAIL_CFLAGS := $(BASE_CFLAGS) -O2 -fPIC -Itests/stubs
TAIL_DEPS := tests/modules/mod_tail.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h
$(STUB_DIR)/libmod_tail.so: $(TAIL_DEPS) $(STUB_DIR)/libcudart.so $(STUB_DIR)/libcuda.so.1
	$(Q)$(CC) $(TAIL_CFLAGS) -shared -o $@ $< -L$(STUB_DIR) -lcudart -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'
$(STUB_DIR)/libmod_tail12.so: $(TAIL_DEPS) $(STUB_DIR)/libcudart.so.12 $(STUB_DIR)/libcuda.so.1
	$(Q)$(CC) $(TAIL_CFLAGS) -shared -o $@ $< $(STUB_DIR)/libcudart.so.12 -L$(STUB_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'
$(STUB_DIR)/libmod_tailno.so: $(TAIL_DEPS) $(STUB_DIR)/libcudart.so $(STUB_DIR)/libcuda.so.1
	$(Q)$(CC) $(TAIL_CFLAGS) -fno-optimize-sibling-calls -shared -o $@ $< -L$(STUB_DIR) -lcudart -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'
LAYOUT_MODS += $(addprefix $(STUB_DIR)/,libmod_tail.so libmod_tail12.so libmod_tailno.so)

# For NVIDIA's real runtime 11.8 from Debian (scripts/setup-nvidia-debian.sh):
# a program and a module linked to the soname libcudart.so.11.0, against a
# stand-in of that soname kept in obj/ (on no search path; its symbols
# versioned as the real one's, cudaMalloc@@libcudart.so.11.0, so that the
# references bound at run time are the ones a build against the real runtime
# makes); the tests put Debian's real one on LD_LIBRARY_PATH.
CUDART11_STANDIN := $(B)/obj/cudart11/libcudart.so.11.0
$(CUDART11_STANDIN): tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	@printf 'libcudart.so.11.0 { global: *; };\n' > $(@D)/cudart11.map
	$(Q)$(CC) $(STUB_CFLAGS) -DFAKE_CUDART_VERSION=11080 '-DFAKE_CUDART_NAME="libcudart.so.11.0"' -shared \
	    -Wl,-soname,libcudart.so.11.0 -Wl,--version-script,$(@D)/cudart11.map -o $@ $< -ldl -pthread
$(STUB_DIR)/libmod_rt11.so: $(MOD_DEPS) $(CUDART11_STANDIN)
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME '-DLIB_NAME="libcudart.so.11.0"' -shared -o $@ $< $(CUDART11_STANDIN) -ldl
$(B)/tests/programs/rt11_main: tests/programs/real_main.c $(wildcard tests/programs/*.h) $(CUDART11_STANDIN)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -Itests/stubs -o $@ $< $(CUDART11_STANDIN) -ldl
LAYOUT_MODS += $(STUB_DIR)/libmod_rt11.so $(B)/tests/programs/rt11_main
# A module whose cudaMalloc reference carries no version (linked against an
# unversioned stand-in of the same soname), run against the versioned real
# one: the dynamic linker binds it to the first definition in scope order.
CUDART11U_STANDIN := $(B)/obj/cudart11u/libcudart.so.11.0
$(CUDART11U_STANDIN): tests/stubs/fake_cudart.c $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -DFAKE_CUDART_VERSION=11080 '-DFAKE_CUDART_NAME="libcudart.so.11.0"' -shared \
	    -Wl,-soname,libcudart.so.11.0 -o $@ $< -ldl -pthread
$(STUB_DIR)/libmod_rt11u.so: $(MOD_DEPS) $(CUDART11U_STANDIN)
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME '-DLIB_NAME="libcudart.so.11.0"' -shared -o $@ $< $(CUDART11U_STANDIN) -ldl
LAYOUT_MODS += $(STUB_DIR)/libmod_rt11u.so

# NVIDIA's real runtime, where a toolkit is installed (CUDA_HOME or
# /usr/local/cuda): a module and programs of our own linked to it, run on the
# stand-in drivers by tests/integration/test_layouts.c.
CUDA_LIBDIR := $(patsubst %/,%,$(dir $(firstword $(wildcard $(CUDA_HOME)/lib64/libcudart.so /usr/local/cuda/lib64/libcudart.so))))
ifneq ($(CUDA_LIBDIR),)
$(STUB_DIR)/libmod_realrt.so: $(MOD_DEPS) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(MOD_CFLAGS) -DMOD_RUNTIME '-DLIB_NAME="libcudart.so.13"' -shared -o $@ $< -L$(CUDA_LIBDIR) -lcudart -ldl -Wl,-rpath,$(CUDA_LIBDIR)
$(B)/tests/programs/real_%: tests/programs/real_%.c $(wildcard tests/programs/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -Itests/stubs -o $@ $< -L$(CUDA_LIBDIR) -lcudart -ldl -Wl,-rpath,$(CUDA_LIBDIR)
$(B)/tests/programs/realstatic_%: tests/programs/real_%.c $(wildcard tests/programs/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -Itests/stubs -o $@ $< $(CUDA_LIBDIR)/libcudart_static.a -ldl -lrt -pthread
LAYOUT_MODS += $(STUB_DIR)/libmod_realrt.so $(B)/tests/programs/realstatic_main
$(STUB_DIR)/libmod_tailreal.so: $(TAIL_DEPS) $(STUB_DIR)/libcuda.so.1 | deps
	$(Q)$(CC) $(TAIL_CFLAGS) -DMOD_REAL_RT -shared -o $@ $< -L$(CUDA_LIBDIR) -lcudart -L$(STUB_DIR) -l:libcuda.so.1 \
	    -Wl,-rpath,$(CUDA_LIBDIR)
LAYOUT_MODS += $(STUB_DIR)/libmod_tailreal.so
else
PROGS := $(filter-out $(B)/tests/programs/real_%,$(PROGS))
endif
STUBS += $(LAYOUT_MODS)

# A library whose dependency is nowhere the loader looks (its own folder,
# obj/, is on no search path): what the loader cannot preload.
$(B)/tests/lib-broken/libleakwatch.so: tests/modules/missing_dep.c | deps
	@mkdir -p $(@D) $(B)/obj/stubs
	$(Q)$(CC) $(STUB_CFLAGS) -DLW_THE_DEP -shared -Wl,-soname,libleakwatch-missing-dep.so \
	    -o $(B)/obj/stubs/libleakwatch-missing-dep.so $<
	$(Q)$(CC) $(STUB_CFLAGS) -shared -o $@ $< -Wl,--no-as-needed $(B)/obj/stubs/libleakwatch-missing-dep.so
STUBS += $(B)/tests/lib-broken/libleakwatch.so

$(STUB_DIR)/libnextprobe.so: tests/integration/next_probe_lib.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -o $@ $< -ldl
STUBS += $(STUB_DIR)/libnextprobe.so
# The two stand-ins a user may run a program on (leakwatch run --cuda-stand-ins);
# installed with the command by both routes.
STAND_INS := $(STUB_DIR)/libcuda.so.1 $(STUB_DIR)/libcudart.so
# With the CUDA 12 runtime and libraries beside them, the same folder hosts
# Debian's real PyTorch 2.6 (tests/real/torch_smoke.py).
stand-ins: $(STAND_INS) $(STUB_DIR)/libcudart.so.12 $(CUDA12_STUBS)

# Two builds of one library with other frame sizes at the same offsets
# (rt_stacks dlclose: unwind rules cached by address must go at dlclose).
$(STUB_DIR)/libstackvar%.so: tests/integration/stackvar_lib.c $(STUB_DIR)/libcudart.so | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -O2 -fomit-frame-pointer -DVARIANT=$* -shared -o $@ $< -L$(STUB_DIR) -lcudart
STUBS += $(STUB_DIR)/libstackvar1.so $(STUB_DIR)/libstackvar2.so
# The same again for names (test_symbols: the symbol cache renewed at dlclose).
$(STUB_DIR)/libsymvar%.so: tests/integration/symvar_lib.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -DVARIANT=$* -shared -o $@ $<
STUBS += $(STUB_DIR)/libsymvar1.so $(STUB_DIR)/libsymvar2.so

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
$(B)/tests/programs/dl_%: tests/programs/dl_%.c $(wildcard tests/programs/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(PROG_CFLAGS) -o $@ $< -ldl -Wl,-rpath,'$$ORIGIN/../lib'
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
$(B)/tests/unit/%: tests/unit/%.c $(B)/liblw_tools.a $(B)/liblw_core.a | $(B)/.test-libs-ok
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) $(TOOL_INC) -o $@ $< $(B)/liblw_tools.a $(B)/liblw_core.a \
	    $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)
$(B)/tests/integration/%: tests/integration/%.c $(HARNESS_SRCS) $(wildcard tests/integration/*.h) $(B)/liblw_tools.a $(B)/liblw_core.a | $(B)/.test-libs-ok
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_ALL) $(OPT) -pthread $(CHECK_CFLAGS) $(TOOL_INC) -Itests/integration -o $@ $< $(HARNESS_SRCS) \
	    $(B)/liblw_tools.a $(B)/liblw_core.a $(SAN_LDFLAGS) $(CHECK_LIBS) $(JSON_LIBS) $(LIB_LIBS)

test-bins: all $(STUBS) $(PROGS) $(UNITS) $(INTEGS)

# Python frame probe: loaded with ctypes by tests/python/check_pyframes.py,
# which tests/unit/test_pyframes runs under every CPython >= 3.8 found.
$(B)/tests/python/pyprobe.so: tests/python/pyprobe.c src/track/pyframes.c $(wildcard src/track/*.h src/loader/*.h src/vocab/*.h src/base/*.h) | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_track) $(OPT) -fPIC -shared -pthread -o $@ tests/python/pyprobe.c \
	    src/track/pyframes.c $(SAN_LDFLAGS) -ldl
test-bins: $(B)/tests/python/pyprobe.so
$(B)/tests/python/fake_freethreaded.so: tests/python/fake_freethreaded.c | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) -O1 -fPIC -shared -o $@ $<
test-bins: $(B)/tests/python/fake_freethreaded.so

# Runs every test binary; each prints Check's summary line. LW_BUILD tells the
# integration tests where the library, stand-ins and programs are.
# Under the sanitizer build the preloaded shim needs the ASan runtime loaded
# first: the integration tests put LW_ASAN_RT at the head of LD_PRELOAD.
check-fast: test-bins check-cuda-abi
	@LW_ASAN_RT="$(if $(filter 1,$(SAN)),$(shell $(CC) -print-file-name=libasan.so))" \
	    scripts/run-tests.sh $(B) $(UNITS) $(INTEGS)

# ThreadSanitizer build (SAN=thread) of the suites where concurrency is what
# is tested; the rest of the suite runs once in the plain and the ASan builds
# (under TSan it would find nothing new and double the time):
#   test_track       the live table, the call sites and the per-thread totals
#                    shards, filled and summed by many threads at once;
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
# at once (detect_deadlocks=0). No Python test: CPython is not built with
# TSan, and loading it under libtsan reports the interpreter's own races.
TSAN_B := build/tsan
TSAN_TESTS := tests/unit/test_track tests/integration/test_safety \
    tests/integration/test_job_safety tests/integration/test_symbols
tsan-bins: all $(STUBS) $(PROGS) $(B)/examples/train_loop $(addprefix $(B)/,$(TSAN_TESTS))
check-tsan:
	@$(MAKE) --no-print-directory B=$(TSAN_B) SAN=thread tsan-bins
	@LW_ASAN_RT="$(shell $(CC) -print-file-name=libtsan.so)" \
	    TSAN_OPTIONS="halt_on_error=1 exitcode=66 die_after_fork=0 detect_deadlocks=0" \
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

# A few programs under valgrind with the shim preloaded (tests/valgrind.supp
# documents the suppressions).
check-valgrind: all $(STUBS) $(PROGS)
	@scripts/check-valgrind.sh $(B)

check-san:
	@$(MAKE) --no-print-directory B=build/san SAN=1 check-fast

# AArch64: cross-built (gcc-aarch64-linux-gnu, an arm64 sysroot unpacked into
# the cache folder) and run under qemu-user; see scripts/check-aarch64.sh.
check-aarch64:
	@scripts/check-aarch64.sh

# No lower layer calls a higher one (scripts/check-layers.sh reads the objects).
# It reads every object under $(B)/obj: the objects of sources that have moved
# or gone (a file renamed, a layer split) are removed first, else an old copy
# would count as a second definition in another layer.
OBJ_DIRS := $(B)/obj $(addprefix $(B)/obj/,$(filter-out top,$(LAYERS)) tools $(TOOL_DIRS:%=tools/%))
STALE_OBJS = $(filter-out $(LIB_OBJS) $(TOOL_OBJS) $(B)/obj/empty.o,$(wildcard $(OBJ_DIRS:%=%/*.o)))
check-layers: all
	$(if $(STALE_OBJS),@rm -f $(STALE_OBJS) $(STALE_OBJS:.o=.d))
	@scripts/check-layers.sh $(B)
	@scripts/check-static-tls.sh $(B)/libleakwatch.so

# The test scripts' own tests (tests/scripts: scripts/run-tests.sh's tally).
check-scripts:
	@for t in tests/scripts/test-*.sh; do $$t || exit 1; done

# The GPU check (tests/gpu/check.py) end to end on the CPU stand-ins and the
# stand-in torch (tests/python/faketorch): everything but the GPU. ~20 s.
check-gpu-dry: all $(STAND_INS)
	@rm -rf $(B)/gpu-dry
	@tests/gpu/run.sh --dry-run --build $(B) --out $(B)/gpu-dry --budget 240 >$(B)/gpu-dry.log 2>&1 || \
	    { cat $(B)/gpu-dry.log; echo "check-gpu-dry: FAILED (results in $(B)/gpu-dry)"; exit 1; }
	@echo "check-gpu-dry: the GPU check ran on the stand-ins ($$(tail -1 $(B)/gpu-dry.log))"

# The real-clients tier (tests/real): Debian trixie's real PyTorch 2.6 (CUDA 12
# build), numba and PyCUDA under build/leakwatch on the CPU stand-ins, in a
# root unpacked once into ~/.cache/leakwatch by scripts/setup-real-clients.sh
# and entered with chroot (scripts/in-real-root.sh: needs root). Fails, with
# the reason, where the clients cannot be had: a skipped tier is not a pass.
check-real: all $(STUBS)
	@root=$$(sh scripts/setup-real-clients.sh) || \
	    { echo "check-real: FAILED: the real clients cannot be set up here (see above)"; exit 1; }; \
	    sh scripts/in-real-root.sh "$$root" python3 -m pytest -p no:cacheprovider -q -rfE tests/real

# Every relative link and anchor in README.md, CONTRIBUTING.md, examples/ and
# docs/ points at something that exists; and docs-check.
check-docs: docs-check
	@python3 scripts/check-doc-links.py

# The example lines the docs cite (FILE:LINE, "line N") are the examples'
# leak-line marks, and the outputs they quote (<!-- docs-check: run|shape CMD -->
# before a block) are what a real run of CMD prints, compared on their stable
# parts (place, rate, verdict words), not times or counts. A few seconds.
docs-check: all $(STAND_INS) $(B)/examples/train_loop
	@python3 scripts/check-doc-drift.py --build $(B)

check: test-deps check-docs check-scripts check-layers check-fast check-san check-tsan check-valgrind check-install check-gpu-dry fuzz-smoke check-dist check-spdx lint

demo: all $(STAND_INS) $(B)/examples/train_loop
	@scripts/demo.sh $(B)

bench: all $(STUBS) $(PROGS)
	@scripts/bench.sh $(B)

# Installs the command, the library, the headers, the CPU stand-ins, the
# Python package, the man page and the bash completion; records the folders
# it had to create so that uninstall leaves PREFIX as it was (scripts/install.sh).
install: all $(STAND_INS) $(DOCS)
	@scripts/install.sh install "$(DESTDIR)" "$(PREFIX)" "$(B)"
uninstall:
	@scripts/install.sh uninstall "$(DESTDIR)" "$(PREFIX)" "$(B)"

# The wheel, from this build folder (the backend runs make all stand-ins docs).
# pip install . builds the same; see pyproject.toml and python/backend.
PYTHON ?= python3
wheel: all $(STAND_INS) $(DOCS)
	@mkdir -p $(B)/dist
	$(Q)LEAKWATCH_BUILD_DIR=$(B) $(PYTHON) python/backend/leakwatch_build.py wheel $(B)/dist

# The install routes end to end: a wheel into a fresh venv, make install and
# uninstall into a temporary prefix, the man page rendered (tests/install).
check-install: all $(STAND_INS) $(DOCS) $(B)/examples/train_loop
	@PYTHON=$(PYTHON) tests/install/check-install.sh $(B)

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
$(B)/fuzz/fuzz_option_parse: tests/fuzz/fuzz_option_parse.c src/base/options.c src/base/log.c src/base/sig_guard.c src/base/options.h
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_LIB_CFLAGS) -o $@ $< src/base/options.c src/base/log.c src/base/sig_guard.c
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

# Build dependencies: apt-get runs only for make deps, demo and check (root or
# sudo; else one message). Any other goal only checks: when something is
# missing it stops with one line naming it and saying to run make deps.
# The tests' tools (clang's libFuzzer, valgrind, cppcheck, ...) only for make check.
DEPS_MODE := $(if $(filter deps demo check,$(MAKECMDGOALS)),build,check)
deps: $(B)/.deps-ok
$(B)/.deps-ok: scripts/install-deps.sh
	@scripts/install-deps.sh $(DEPS_MODE)
	@mkdir -p $(B) && touch $@
test-deps: $(B)/.test-deps-ok
$(B)/.test-deps-ok: scripts/install-deps.sh | $(B)/.deps-ok
	@scripts/install-deps.sh test
	@mkdir -p $(B) && touch $@
# Check and libunwind, for the test programs and make bench only (a plain
# build needs neither): checked, with one line naming what is missing (under
# make check, installed first by test-deps).
$(B)/.test-libs-ok: scripts/install-deps.sh | $(B)/.deps-ok $(if $(filter build,$(DEPS_MODE)),$(B)/.test-deps-ok)
	@scripts/install-deps.sh check-test
	@mkdir -p $(B) && touch $@

format:
	clang-format -i $$(git ls-files '*.c' '*.h')
# A missing tool fails the check (scripts/install-deps.sh test installs both).
lint:
	@for t in clang-format cppcheck; do command -v $$t >/dev/null 2>&1 || \
	    { echo "lint: FAILED: $$t is not installed (Debian package $$t; scripts/install-deps.sh test installs it)"; exit 1; }; done; \
	clang-format --dry-run -Werror $$(git ls-files '*.c' '*.h') && \
	cppcheck --quiet --error-exitcode=1 --enable=warning,portability,performance --inline-suppr \
	    --suppress=missingIncludeSystem -D_GNU_SOURCE -Iinclude $(INC_ALL) $(TOOL_INC) src tools && \
	echo "lint: clang-format and cppcheck clean"

clean:
	rm -rf build

# ---- release ----
# make dist: build/leakwatch-VERSION.tar.gz, reproducible (scripts/dist.sh).
# make distcheck: unpacks it on its own and runs its whole make check.
# check-dist (in make check): reproducible, the tracked files, and the
# unpacked tree builds and passes its unit tests.
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
# The library with one part of the allocation path removed, to measure what
# that part costs: build/ablate-NAME/libleakwatch.so, then
#   bench/perf/compare.sh build build/libleakwatch.so build/ablate-NAME/libleakwatch.so
# NAME: unwind (a fixed 36-frame stack instead of unwinding), python (no
# Python frames), site (one site for every stack, found without a lookup).
ablate:
	@case "$(ABLATE)" in unwind|python|site) ;; \
	  *) echo "make ablate ABLATE=unwind|python|site"; exit 2 ;; esac
	@$(MAKE) --no-print-directory B=build/ablate-$(ABLATE) ABLATE=$(ABLATE) all

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
$(B)/bench/sweep: bench/accuracy/sweep.c src/analyze/detector.c src/analyze/series.c src/analyze/stats.c \
                  $(wildcard src/analyze/*.h)
	@mkdir -p $(@D)
	$(Q)$(CC) $(BASE_CFLAGS) $(INC_analyze) -O2 -o $@ $(filter %.c,$^) -lm
bench-accuracy: $(B)/libleakwatch.so $(STUBS) $(B)/tests/programs/rt_workload $(B)/bench/sweep
	@scripts/bench-accuracy.sh $(B) $(ACCURACY_ARGS)
	@$(B)/bench/sweep $(SWEEP_ARGS)
bench: bench-accuracy
