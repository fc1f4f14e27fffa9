/* SPDX-License-Identifier: Apache-2.0 */
/* Forks while eight threads allocate (and one marks steps), as PyTorch's
 * DataLoader forks its workers from a process that uses CUDA.
 *
 *   rt_safety_fork TEMPLATE FORKS [warm|walk|start]
 *
 * TEMPLATE becomes LEAKWATCH_REPORT before the first CUDA call (use %p, so
 * parent and children write apart). Even-numbered children never touch
 * CUDA; odd-numbered ones allocate 2 MiB from leak_child, free 1 MiB, and
 * exit. Each child's stderr goes to child-PID.err in the current folder.
 * Prints "parent PID", then "quiet PID" or "cuda PID" per child; exits 1 if
 * a child hangs (a lock inherited held) or fails.
 *
 * With "warm", the first fork waits until every thread has made its first
 * call: a thread's first CUDA call sets up its state in leakwatch (glibc's
 * pthread_getattr_np for its stack, its shard, its site cache), which
 * allocates host memory outside every lock a fork takes. glibc's malloc is
 * fork-safe, so the plain build forks from the start; GCC 12's AddressSanitizer
 * allocator is not (no fork handler: a child forked while another thread
 * holds one of its size-class locks waits on it forever), so the ASan build
 * forks only once those first calls are done.
 *
 * With "walk", each fork comes while a thread of the parent writes a report
 * (leakwatch_dump), whose symbols leakwatch finds by walking the loaded
 * objects (dl_iterate_phdr): this program defines dl_iterate_phdr itself
 * (exported, -rdynamic), so leakwatch's walks reach it, and the dumping
 * thread's first walk waits inside, up to HOLD_MS, for the fork. glibc does
 * not make its list lock new in a child: a child forked during the walk
 * would wait forever at its own first walk (its first CUDA call binds
 * leakwatch's entries), unless leakwatch's fork handlers wait for the walk
 * to end. Then each fork waits HOLD_MS.
 *
 * With "start" (FORKS is 1), the fork comes while another thread's first
 * CUDA call starts leakwatch: this program defines __cxa_atexit (which
 * atexit calls; leakwatch registers its exit handler as it starts, under its
 * start lock), and that thread's call waits there, up to HOLD_MS, for the
 * fork. The child, which uses CUDA, must not inherit the start lock held. */
#include "safety.h"

#include <fcntl.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <stdatomic.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MiB (1024 * 1024)
static atomic_int stop;
static atomic_int warm; /* threads past their first call */

/* "walk" mode: a walk held for the fork (see the top). */
#define HOLD_MS 300
static pid_t parent_pid;
static atomic_int hold_armed, held, forked;

typedef int (*walk_cb)(struct dl_phdr_info *, size_t, void *);
typedef struct {
    walk_cb cb;
    void *data;
    int waited;
} held_walk;

/* The held walk's callback: at the first object, waits for the fork. */
static int held_walk_cb(struct dl_phdr_info *info, size_t size, void *arg) {
    held_walk *h = arg;
    if (!h->waited) {
        h->waited = 1;
        atomic_store(&held, 1);
        for (int ms = 0; ms < HOLD_MS && !atomic_load(&forked); ms++)
            usleep(1000);
    }
    return h->cb(info, size, h->data);
}

/* Every dl_iterate_phdr of the process (leakwatch's included); the first
 * walk in the parent after hold_armed is set is held. */
int dl_iterate_phdr(walk_cb cb, void *data) {
    static int (*real)(walk_cb, void *);
    if (!real) real = (int (*)(walk_cb, void *))dlsym(RTLD_NEXT, "dl_iterate_phdr");
    if (getpid() == parent_pid && atomic_exchange(&hold_armed, 0)) {
        held_walk h = {cb, data, 0};
        return real(held_walk_cb, &h);
    }
    return real(cb, data);
}

static void child(int uses_cuda);
static int reap(pid_t pid);

/* The held modes' fork: once thread t is held (10 s at most), prints "held",
 * forks a child that uses CUDA, lets t go on, and reaps the child; then joins
 * t. 0 when the child exited 0 within reap's time. */
static int fork_while_held(pthread_t t) {
    for (int ms = 0; ms < 10000 && !atomic_load(&held); ms++)
        usleep(1000);
    if (atomic_load(&held)) printf("held\n");
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0) exit(4);
    if (pid == 0) child(1);
    atomic_store(&forked, 1);
    printf("cuda %ld\n", (long)pid);
    fflush(stdout);
    int failed = reap(pid) != 0;
    pthread_join(t, NULL);
    return failed;
}

/* "start" mode: the starting thread held in atexit (see the top). */
static atomic_int start_hold_armed;
static pthread_t main_thread;

int __cxa_atexit(void (*fn)(void *), void *arg, void *dso) {
    static int (*real)(void (*)(void *), void *, void *);
    if (!real) real = (int (*)(void (*)(void *), void *, void *))dlsym(RTLD_NEXT, "__cxa_atexit");
    if (getpid() == parent_pid && !pthread_equal(pthread_self(), main_thread) &&
        atomic_exchange(&start_hold_armed, 0)) {
        atomic_store(&held, 1);
        for (int ms = 0; ms < HOLD_MS && !atomic_load(&forked); ms++)
            usleep(1000);
    }
    return real(fn, arg, dso);
}

static void *first_caller(void *arg) {
    (void)arg;
    void *p;
    CHECK(cudaMalloc(&p, MiB));
    return NULL;
}

/* "start" mode: one fork while another thread starts leakwatch. */
static int fork_during_start(void) {
    atomic_store(&start_hold_armed, 1);
    pthread_t a;
    pthread_create(&a, NULL, first_caller, NULL);
    return fork_while_held(a);
}

static void *dumper(void *arg) {
    (void)arg;
    lw_call("leakwatch_dump");
    return NULL;
}

static void *allocator(void *arg) {
    (void)arg;
    int first = 0;
    while (!atomic_load(&stop)) {
        void *p[4];
        for (int i = 0; i < 4; i++)
            CHECK(cudaMalloc(&p[i], 4096));
        for (int i = 0; i < 4; i++)
            CHECK(cudaFree(p[i]));
        if (!first++) atomic_fetch_add(&warm, 1);
    }
    return NULL;
}

static void *stepper(void *arg) {
    (void)arg;
    for (int first = 0; !atomic_load(&stop); first = 1) {
        lw_call("leakwatch_step");
        if (!first) atomic_fetch_add(&warm, 1);
    }
    return NULL;
}

NOINLINE static void leak_child(void) {
    void *a, *b;
    CHECK(cudaMalloc(&a, MiB));
    CHECK(cudaMalloc(&b, MiB));
    CHECK(cudaFree(b));
}

NOINLINE static void leak_parent(void) {
    void *p;
    for (int i = 0; i < 3; i++)
        CHECK(cudaMalloc(&p, MiB));
}

static void child(int uses_cuda) {
    char name[64];
    snprintf(name, sizeof name, "child-%ld.err", (long)getpid());
    int fd = open(name, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0 || dup2(fd, 2) < 0) _exit(3);
    close(fd);
    if (uses_cuda) leak_child();
    /* exit, not _exit: the atexit handlers (ours among them) run. */
    exit(0);
}

/* Prints "  LABEL: " and up to 511 bytes of the file at path. */
static void print_file(const char *label, const char *path) {
    char buf[512];
    FILE *f = fopen(path, "r");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f) fclose(f);
    buf[n] = '\0';
    printf("  %s: %s\n", label, buf);
}

/* Prints what a hung child is doing, for the test's failure message: its
 * state, kernel wait channel and system call (a futex: a lock inherited
 * held, and the mapping it lies in; running: starved), and the child's own
 * stderr; with LW_HANG_GDB set
 * (by hand, when hunting a hang), its threads' backtraces from gdb. */
static void describe_hung(pid_t pid) {
    char path[96];
    const char *files[] = {"stat", "wchan", "syscall"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "/proc/%ld/%s", (long)pid, files[i]);
        print_file(files[i], path);
    }
    /* Waiting on a futex (system call 202): the mapping that holds it, which
     * names the library whose lock it is. */
    unsigned long nr = 0, addr = 0;
    snprintf(path, sizeof path, "/proc/%ld/syscall", (long)pid);
    FILE *f = fopen(path, "r");
    if (f && fscanf(f, "%lu %lx", &nr, &addr) == 2 && nr == 202) {
        char line[512];
        snprintf(path, sizeof path, "/proc/%ld/maps", (long)pid);
        FILE *m = fopen(path, "r");
        while (m && fgets(line, sizeof line, m)) {
            unsigned long lo = 0, hi = 0;
            if (sscanf(line, "%lx-%lx", &lo, &hi) == 2 && addr >= lo && addr < hi)
                printf("  futex in: %s", line);
        }
        if (m) fclose(m);
    }
    if (f) fclose(f);
    snprintf(path, sizeof path, "child-%ld.err", (long)pid);
    print_file("stderr", path);
    if (getenv("LW_HANG_GDB")) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "gdb -q -batch -p %ld -ex 'thread apply all bt' 2>&1", (long)pid);
        fflush(stdout);
        if (system(cmd) < 0) printf("  (gdb did not run)\n");
    }
}

/* 0 when the child exited 0 within 10 s. */
static int reap(pid_t pid) {
    struct timespec t0, now;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int status = 0;
    for (;;) {
        if (waitpid(pid, &status, WNOHANG) == pid) break;
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec - t0.tv_sec > 10) {
            printf("child %ld hung\n", (long)pid);
            describe_hung(pid);
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return -1;
        }
        usleep(1000);
    }
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -1;
}

/* "walk" mode: each fork while the dumping thread's walk is held; every
 * child uses CUDA. Prints "held" before each fork whose walk was held. */
static int forks_during_walks(int forks) {
    void *p;
    CHECK(cudaMalloc(&p, 4096)); /* leakwatch started: a dump has a report to write */
    int failed = 0;
    for (int i = 0; i < forks; i++) {
        atomic_store(&held, 0);
        atomic_store(&forked, 0);
        atomic_store(&hold_armed, 1);
        pthread_t d;
        pthread_create(&d, NULL, dumper, NULL);
        failed |= fork_while_held(d);
    }
    CHECK(cudaFree(p));
    return failed;
}

int main(int argc, char **argv) {
    int warm_start = argc > 3 && !strcmp(argv[3], "warm");
    int walk = argc > 3 && !strcmp(argv[3], "walk");
    int at_start = argc > 3 && !strcmp(argv[3], "start");
    if (argc < 3 || (argc > 3 && !warm_start && !walk && !at_start)) return 2;
    setenv("LEAKWATCH_REPORT", argv[1], 1);
    int forks = atoi(argv[2]);
    parent_pid = getpid();
    main_thread = pthread_self();
    printf("parent %ld\n", (long)getpid());
    fflush(stdout);
    if (at_start) {
        int failed = fork_during_start();
        leak_parent();
        return failed;
    }
    if (walk) {
        int failed = forks_during_walks(forks);
        leak_parent();
        return failed;
    }
    pthread_t t[9];
    for (int i = 0; i < 8; i++)
        pthread_create(&t[i], NULL, allocator, NULL);
    pthread_create(&t[8], NULL, stepper, NULL);
    if (warm_start)
        while (atomic_load(&warm) < 9)
            usleep(1000);
    int failed = 0;
    for (int i = 0; i < forks; i++) {
        usleep(2000); /* let the threads be mid-call */
        fflush(stdout);
        pid_t pid = fork();
        if (pid < 0) return 4;
        if (pid == 0) child(i % 2);
        printf("%s %ld\n", i % 2 ? "cuda" : "quiet", (long)pid);
        fflush(stdout);
        if (reap(pid) != 0) failed = 1;
    }
    atomic_store(&stop, 1);
    for (int i = 0; i < 9; i++)
        pthread_join(t[i], NULL);
    leak_parent();
    return failed;
}
