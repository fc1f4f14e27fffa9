#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""Writes the C source of a large library for bench/perf/callgrind_sym.sh: N
exported functions with long names, as a C++ library's are, each calling a
static function of its own (in .symtab only, as anonymous-namespace and
static functions are)."""
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
out = sys.stdout
for i in range(n):
    out.write(
        "static __attribute__((noinline)) int "
        f"torch_native_detail_kernel_impl_static_{i:05d}(int x) {{ return x * {i} + 1; }}\n"
        f"int at_native_exported_operator_implementation_{i:05d}(int x) "
        f"{{ return torch_native_detail_kernel_impl_static_{i:05d}(x) + 2; }}\n"
    )
