/* SPDX-License-Identifier: Apache-2.0 */
/* A training loop in miniature, written against the CUDA runtime API, with
 * the classic leak: each step keeps its loss on the GPU (history.append(loss)
 * without .item()). Build it against the real libcudart, or against the
 * project's CPU stand-ins (make demo does), and run it under leakwatch.
 *
 *   train_loop [--steps N] [--leak BYTES] [--no-marks] [--step-us US]
 *
 * --leak 0 is the fixed version. --no-marks leaves step detection to
 * leakwatch's time-based sampler. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int cudaError_t;
cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != 0) {                                                                             \
            fprintf(stderr, "%s failed: %d\n", #call, e_);                                         \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

#define MiB (1024u * 1024u)

/* leakwatch_step() when the library is loaded; nothing otherwise. Looked up
 * again every 64 steps until found: a job that `leakwatch attach` joins later
 * marks its steps too (a lookup kept from before the attach would not). */
static void mark_step(void) {
    static void (*step)(void);
    static unsigned steps_since;
    if (!step && steps_since++ % 64 == 0)
        step = (void (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_step");
    if (step) step();
}

/* The bug: the loss tensor (and what it holds) outlives the step. */
__attribute__((noinline)) static void keep_loss_history(void **history, int step, size_t bytes) {
    if (bytes) CHECK(cudaMalloc(&history[step], bytes)); /* leak-line */
}

__attribute__((noinline)) static void forward_backward(void) {
    void *act[8];
    for (int i = 0; i < 8; i++)
        CHECK(cudaMalloc(&act[i], 4 * MiB)); /* activations */
    for (int i = 7; i >= 0; i--)
        CHECK(cudaFree(act[i])); /* freed by backward */
}

/* The step's own time after its work, as a GPU step takes: a step held up
 * (the machine busy, leakwatch starting) makes the run later, not the next
 * steps shorter. Under leakwatch's test clock (LEAKWATCH_TEST_CLOCK=1, which
 * the project's tests set) the time is leakwatch's to count, not slept: the
 * same run on any machine. */
static void step_time(long us) {
    static int (*advance)(long long ns);
    static int looked;
    if (!looked) {
        advance = (int (*)(long long))dlsym(RTLD_DEFAULT, "leakwatch__test_clock_advance");
        looked = 1;
    }
    if (advance && advance((long long)us * 1000) == 0) return;
    struct timespec d = {us / 1000000, (us % 1000000) * 1000};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &d, &d) != 0) {
    } /* interrupted: the rest of it */
}

int main(int argc, char **argv) {
    int steps = 400, marks = 1;
    size_t leak = 512;
    long step_us = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--steps") && i + 1 < argc)
            steps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--leak") && i + 1 < argc)
            leak = strtoul(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--no-marks"))
            marks = 0;
        else if (!strcmp(argv[i], "--step-us") && i + 1 < argc)
            step_us = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--steps N] [--leak BYTES] [--no-marks] [--step-us US]\n",
                    argv[0]);
            return 2;
        }
    }
    void *weights, *optimizer_state;
    CHECK(cudaMalloc(&weights, 64 * MiB));
    CHECK(cudaMalloc(&optimizer_state, 128 * MiB));
    void **history = calloc((size_t)steps, sizeof *history);
    for (int step = 0; step < steps; step++) {
        forward_backward();
        keep_loss_history(history, step, leak);
        if (marks) mark_step();
        if (step_us) step_time(step_us);
    }
    printf("trained %d steps\n", steps);
    return 0;
}
