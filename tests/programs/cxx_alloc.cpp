/* SPDX-License-Identifier: Apache-2.0 */
// A C++ program whose leaking call stack goes through what C++ compilers make
// of names: a namespace, a class template's method, an inlined helper and a
// lambda. tests/integration/test_symbols.c checks that the report names each
// frame demangled, with file:line; it finds the lines by the LW_LINE markers
// below, so keep each marker on the line it names.
// Usage: cxx_alloc [COUNT [SIZE]]   leaks COUNT blocks of SIZE bytes (3, 1 MiB)
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <vector>

extern "C" int cudaMalloc(void **p, size_t n);
extern "C" int cudaFree(void *p);

namespace ns {

// Always inlined, so that its frame exists only in the debug information.
__attribute__((always_inline)) inline void *device_alloc(size_t n) {
    void *p = nullptr;
    int rc = cudaMalloc(&p, n); // LW_LINE_ALLOC
    if (rc != 0) {
        std::fprintf(stderr, "cudaMalloc: %d\n", rc);
        std::exit(1);
    }
    return p;
}

template <typename T> class Widget {
  public:
    // Keeps every block: the leak.
    __attribute__((noinline)) void grow(size_t n) {
        blocks_.push_back(device_alloc(n * sizeof(T))); // LW_LINE_GROW
        asm volatile("" ::: "memory");                  // not a tail call: grow stays on the stack
    }

  private:
    // The C++ runtime, as in any real C++ program: its demangler is the one
    // the report uses in-process.
    std::vector<void *> blocks_;
};

} // namespace ns

int main(int argc, char **argv) {
    long count = argc > 1 ? std::atol(argv[1]) : 3;
    long size = argc > 2 ? std::atol(argv[2]) : 1 << 20;
    static ns::Widget<int> widget;
    auto leak = [](long k, size_t bytes) __attribute__((noinline)) {
        for (long i = 0; i < k; i++)
            widget.grow(bytes / sizeof(int)); // LW_LINE_LAMBDA
        asm volatile("" ::: "memory");
    };
    leak(count, (size_t)size);
    // Churn that is freed, so the leaking site is not the only one.
    void *p = nullptr;
    if (cudaMalloc(&p, 4096) == 0) cudaFree(p);
    return 0;
}
