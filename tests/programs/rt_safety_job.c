/* SPDX-License-Identifier: Apache-2.0 */
/* A job that leakwatch must leave as it found it: its children, its
 * descriptors, its signals and its exit (tests/integration/test_job_safety.c).
 *
 *   rt_safety_job enabled        prints leakwatch_enabled() before any CUDA call
 *   rt_safety_job sigchld        a SIGCHLD handler, a thread reaping any child
 *                                and sleeps, while three reports (with source
 *                                lines: addr2line) are written; prints
 *                                "sigchld N reaped M eintr K"
 *   rt_safety_job closefds DIR   closes descriptors 3-1023, makes its first CUDA
 *                                call, closes 3-63 (leakwatch's among them), then writes DIR/f0..f2
 * through stdio (flushed at exit) rt_safety_job raise SIG      allocates, then raises SIG (default
 * action) rt_safety_job handle SIG     the same with its own handler, which prints "handled SIG"
 * and calls exit(7) rt_safety_job wait MS        allocates, then sleeps MS milliseconds
 *   rt_safety_job forkclock      (LEAKWATCH_REPORT=r.json, LEAKWATCH_REPORT_EVERY=1)
 *                                waits for its first periodic report, forks 0.6 s
 *                                later a child that allocates and, 0.5 s on,
 *                                prints "child early report yes|no": whether its
 *                                own periodic report (r.PID.json) came already
 *   rt_safety_job quiet          allocates and exits; prints nothing
 *   rt_safety_job lateexit       an exit handler registered before its first
 *                                CUDA call (so it runs after leakwatch's, with
 *                                its exit summary), that makes CUDA calls, as
 *                                libtorch_cuda's exit handlers do; it writes
 *                                "late handler" on stderr and prints "late
 *                                getdevice R dev D malloc R free R sync R"
 *                                (the runtime's results)
 *   rt_safety_job stderrdata DIR closes its stderr, opens DIR/data (which gets
 *                                descriptor 2) and writes its records there
 *                                around its CUDA calls and its exit
 *   rt_safety_job fdlimit N      allocates (leakwatch starts), lowers its limit
 *                                of descriptors to N (ulimit -n N), opens
 *                                /dev/null until it can no more and prints
 *                                "opened K"
 *   rt_safety_job stacks         allocates (leakwatch starts its threads), then
 *                                prints "thread stacks K KiB": the address
 *                                space of the thread stacks in its memory map
 *                                (writable private mappings right above a
 *                                one-page guard)
 *   rt_safety_job closerange SIG allocates, closes every descriptor from 3 up
 *                                (close_range, as a daemon or a sandbox
 *                                helper does), then raises SIG */
#include "safety.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_long sigchlds, reaped, eintrs;
static atomic_int stop;

static void on_sigchld(int sig) {
    (void)sig;
    atomic_fetch_add(&sigchlds, 1);
}

/* A job that reaps any child it has (as some process supervisors do). */
static void *reaper(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        int st;
        pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) atomic_fetch_add(&reaped, 1);
        usleep(200);
    }
    return NULL;
}

static void *sleeper(void *arg) {
    (void)arg;
    while (!atomic_load(&stop)) {
        struct timespec ts = {0, 2000000};
        if (nanosleep(&ts, NULL) != 0 && errno == EINTR) atomic_fetch_add(&eintrs, 1);
    }
    return NULL;
}

NOINLINE static void *leak_job(size_t n) {
    void *p;
    CHECK(cudaMalloc(&p, n));
    return p;
}

cudaError_t cudaGetDevice(int *device);
cudaError_t cudaDeviceSynchronize(void);

/* Runs after leakwatch's exit handler (registered at the first CUDA call,
 * after this one): every call must reach the runtime and get its answer. */
static void late_exit_handler(void) {
    fprintf(stderr, "late handler\n");
    int dev = -1;
    void *p = NULL;
    int get = (int)cudaGetDevice(&dev);
    int alloc = (int)cudaMalloc(&p, 1 << 20);
    int fr = alloc == 0 ? (int)cudaFree(p) : -1;
    int sync = (int)cudaDeviceSynchronize();
    printf("late getdevice %d dev %d malloc %d free %d sync %d\n", get, dev, alloc, fr, sync);
    fflush(stdout);
}

static volatile sig_atomic_t handled;

static void on_signal(int sig) {
    handled = sig;
}

int main(int argc, char **argv) {
    const char *mode = argc > 1 ? argv[1] : "quiet";
    if (!strcmp(mode, "enabled")) {
        int (*en)(void) = (int (*)(void))dlsym(RTLD_DEFAULT, "leakwatch_enabled");
        printf("enabled %d\n", en ? en() : -1);
        return 0;
    }
    if (!strcmp(mode, "sigchld")) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_sigchld;
        sigaction(SIGCHLD, &sa, NULL);
        pthread_t r, s;
        pthread_create(&r, NULL, reaper, NULL);
        pthread_create(&s, NULL, sleeper, NULL);
        leak_job(4096);
        for (int i = 0; i < 3; i++)
            lw_call("leakwatch_dump");
        usleep(50000);
        atomic_store(&stop, 1);
        pthread_join(r, NULL);
        pthread_join(s, NULL);
        printf("sigchld %ld reaped %ld eintr %ld\n", atomic_load(&sigchlds), atomic_load(&reaped),
               atomic_load(&eintrs));
        return 0;
    }
    if (!strcmp(mode, "closefds") && argc > 2) {
        /* A clean slate first (as a daemon makes), so that leakwatch's
         * descriptors are the lowest numbers, which the job's files get back. */
        for (int fd = 3; fd < 1024; fd++)
            close(fd);
        leak_job(4096);
        for (int fd = 3; fd < 64; fd++)
            close(fd);
        FILE *f[3];
        for (int i = 0; i < 3; i++) {
            char path[4200];
            snprintf(path, sizeof path, "%s/f%d", argv[2], i);
            f[i] = fopen(path, "w");
            if (!f[i]) return 3;
            fprintf(f[i], "data %d\n", i);
        }
        leak_job(4096);
        return 0; /* the files are flushed by exit(), after leakwatch's handlers */
    }
    if ((!strcmp(mode, "raise") || !strcmp(mode, "handle")) && argc > 2) {
        int sig = atoi(argv[2]);
        if (!strcmp(mode, "handle")) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = on_signal;
            sigaction(sig, &sa, NULL);
        }
        leak_job(4096);
        printf("raising\n");
        fflush(stdout);
        raise(sig);
        if (handled) {
            /* The handler ran (raise returns after it): a job that then
             * exits normally. */
            printf("handled %d\n", (int)handled);
            exit(7);
        }
        usleep(200000);
        return 0;
    }
    if (!strcmp(mode, "forkclock")) {
        leak_job(4096);
        const char *rep = getenv("LEAKWATCH_REPORT");
        for (int i = 0; rep && access(rep, F_OK) != 0 && i < 6000; i++)
            usleep(5000);
        usleep(600000); /* the parent is due its next one in 0.4 s */
        pid_t c = fork();
        if (c == 0) {
            leak_job(4096);
            usleep(500000);
            char own[64];
            snprintf(own, sizeof own, "r.%ld.json", (long)getpid());
            printf("child early report %s\n", access(own, F_OK) == 0 ? "yes" : "no");
            exit(0);
        }
        int st;
        waitpid(c, &st, 0);
        return 0;
    }
    if (!strcmp(mode, "lateexit")) {
        atexit(late_exit_handler);
        for (int i = 0; i < 8; i++)
            leak_job(1 << 20);
        return 0;
    }
    if (!strcmp(mode, "stderrdata") && argc > 2) {
        char path[4200];
        snprintf(path, sizeof path, "%s/data", argv[2]);
        close(2);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd != 2) return 3;
        dprintf(fd, "record 0\n");
        leak_job(4096);
        lw_call("leakwatch_dump");
        dprintf(fd, "record 1\n");
        leak_job(4096);
        return 0; /* the exit report and summary come after this */
    }
    if (!strcmp(mode, "fdlimit") && argc > 2) {
        leak_job(4096);
        struct rlimit rl = {(rlim_t)atol(argv[2]), (rlim_t)atol(argv[2])};
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) return 3;
        int fds[256], n = 0;
        while (n < 256 && (fds[n] = open("/dev/null", O_RDONLY)) >= 0)
            n++;
        printf("opened %d\n", n);
        for (int i = 0; i < n; i++)
            close(fds[i]);
        return 0;
    }
    if (!strcmp(mode, "stacks")) {
        leak_job(4096);
        FILE *m = fopen("/proc/self/maps", "re");
        if (!m) return 3;
        char line[512];
        unsigned long prev_end = 0, prev_size = 0, total = 0;
        int prev_guard = 0;
        while (fgets(line, sizeof line, m)) {
            unsigned long lo, hi;
            char perms[8];
            if (sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) != 3) continue;
            if (!strcmp(perms, "rw-p") && prev_guard && prev_end == lo && prev_size == 4096 &&
                !strchr(line, '['))
                total += hi - lo;
            prev_guard = !strcmp(perms, "---p");
            prev_end = hi, prev_size = hi - lo;
        }
        fclose(m);
        printf("thread stacks %lu KiB\n", total / 1024);
        return 0;
    }
    if (!strcmp(mode, "closerange") && argc > 2) {
        int sig = atoi(argv[2]);
        leak_job(4096);
        /* close_range(3, ~0U, 0), by its number (436 on every architecture):
         * older C libraries lack the wrapper. Without it, the same by hand. */
        if (syscall(436, 3u, ~0u, 0u) != 0)
            for (int fd = 3; fd < 65536; fd++)
                close(fd);
        printf("raising\n");
        fflush(stdout);
        raise(sig);
        return 0;
    }
    if (!strcmp(mode, "wait") && argc > 2) {
        leak_job(4096);
        printf("ready\n");
        fflush(stdout);
        usleep((useconds_t)(atol(argv[2]) * 1000));
        return 0;
    }
    leak_job(4096);
    return 0;
}
