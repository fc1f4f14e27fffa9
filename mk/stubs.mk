# SPDX-License-Identifier: Apache-2.0
# What the tests run against: the CPU stand-ins for the CUDA libraries, the
# layout and tail-call modules, and the test programs (tests/programs).

# ---- CPU stand-ins for the CUDA libraries (tests only) ----
STUB_CFLAGS := $(BASE_CFLAGS) -O1 -fPIC -pthread
# The driver is two sources: fake_cuda.c (the memory and context model the
# hooks are tested against) and fake_cuda_clients.c (the rest of the API that
# real clients, numba and PyCUDA, look up or link).
FAKE_CUDA_SRCS := tests/stubs/fake_cuda.c tests/stubs/fake_cuda_clients.c
$(STUB_DIR)/libcuda.so.1: $(FAKE_CUDA_SRCS) $(wildcard tests/stubs/*.h) include/leakwatch/cuda_api.h | deps
	@mkdir -p $(@D)
	$(Q)$(CC) $(STUB_CFLAGS) -shared -Wl,-soname,libcuda.so.1 -o $@ $(FAKE_CUDA_SRCS) -ldl
	$(Q)ln -sf libcuda.so.1 $(STUB_DIR)/libcuda.so
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
	$(Q)ln -sf libcuda.so.1 $(@D)/libcuda.so
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
