/* SPDX-License-Identifier: Apache-2.0 */
/* leakwatch doctor [--cuda-libs DIR] [--library PATH] [--python PY]
 * The first command to run on a GPU machine: runs small probes under the
 * shim, on the machine's own driver and runtime (and PyTorch, when python
 * can import it), allocating through every path leakwatch follows, and
 * prints a checklist of what was found and seen, with what to do about
 * anything missing. Exit 0 when all is well.
 *
 * The probe is this program itself, started again as "leakwatch doctor
 * --probe FILE" with the shim preloaded: it loads the CUDA libraries at run
 * time (dlopen), so the command never depends on them, and writes what it
 * found to FILE; the shim writes its report beside it. */
#include "cli.h"
#include "commands.h"
#include "run_decisions.h"
#include "json_doc.h"

#include <leakwatch/cuda_api.h>

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <link.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char usage[] =
    "usage: leakwatch doctor [options]\n"
    "\n"
    "Checks that leakwatch sees this machine's CUDA allocations: runs small\n"
    "probes under the shim with the machine's CUDA driver and runtime (and\n"
    "PyTorch, when python can import it), allocating and freeing through the\n"
    "runtime (cudaMalloc), the driver (cuMemAlloc), the stream-ordered pool\n"
    "(cudaMallocAsync) and virtual memory management (cuMemCreate), and prints\n"
    "a checklist: versions found, each path seen with its exact bytes, call\n"
    "stacks and Python frames, and what to do about anything missing.\n"
    "\n"
    "options:\n"
    "      --cuda-libs DIR   look for libcuda.so.1 and libcudart.so in DIR first\n"
    "                        (a non-default install)\n"
    "      --cuda-stand-ins  run the probes on this installation's CPU stand-ins\n"
    "                        for libcuda.so.1 and libcudart.so (no GPU needed)\n"
    "      --library PATH    check this libleakwatch.so instead of the one\n"
    "                        installed with this command\n"
    "      --python PY       the Python to check PyTorch with (default: python3)\n"
    "      --timeout S       stop a probe that runs longer than S seconds (a driver\n"
    "                        whose cuInit hangs; default 120)\n"
    "  -h, --help            this help\n"
    "\n"
    "exit status: 0 all is well; 1 something is missing (the checklist says\n"
    "what); 2 bad usage.\n";

/* What each probe leaves live, in bytes: distinct, so that the report's
 * numbers can only come from the probe that made them. */
#define RT_BYTES (3u << 20)
#define DRV_BYTES (5u << 20)
#define ASYNC_BYTES (7u << 20)
#define CHURN_BYTES (1u << 20)

/* ================= the probe (runs under the shim) ================= */

typedef void *(*dlsym_fn)(void *, const char *);
static dlsym_fn real_dlsym;
static FILE *probe_out;

/* glibc's dlsym, called directly: the lookups must be this program's own
 * (RTLD_DEFAULT finds the shim's exports first, as for a linked program). */
static void *sym(void *h, const char *name) {
    return real_dlsym ? real_dlsym(h, name) : NULL;
}

static void note(const char *key, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(const char *key, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(probe_out, "%s ", key);
    vfprintf(probe_out, fmt, ap);
    fputc('\n', probe_out);
    va_end(ap);
    fflush(probe_out);
}

static const char *path_of(void *fn) {
    Dl_info info;
    return fn && dladdr(fn, &info) && info.dli_fname ? info.dli_fname : "?";
}

static void *open_runtime(void) {
    static const char *const names[] = {
        "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0", NULL, NULL};
    const char *home = getenv("CUDA_HOME");
    char homelib[PATH_MAX];
    for (size_t i = 0; names[i]; i++) {
        void *h = dlopen(names[i], RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    if (home && *home) {
        snprintf(homelib, sizeof homelib, "%s/lib64/libcudart.so", home);
        void *h = dlopen(homelib, RTLD_NOW | RTLD_GLOBAL);
        if (h) return h;
    }
    return dlopen("/usr/local/cuda/lib64/libcudart.so", RTLD_NOW | RTLD_GLOBAL);
}

typedef cudaError_t (*rt_version_fn)(int *);
typedef cudaError_t (*rt_malloc_fn)(void **, size_t);
typedef cudaError_t (*rt_free_fn)(void *);
typedef cudaError_t (*rt_malloc_async_fn)(void **, size_t, cudaStream_t);
typedef cudaError_t (*rt_free_async_fn)(void *, cudaStream_t);
typedef cudaError_t (*rt_sync_fn)(void);
typedef CUresult (*granularity_fn)(size_t *, const CUmemAllocationProp *, int);
typedef CUresult (*reserve_fn)(CUdeviceptr *, size_t, size_t, CUdeviceptr, unsigned long long);

__attribute__((noinline)) static void probe_runtime(void) {
    rt_malloc_fn m = (rt_malloc_fn)sym(RTLD_DEFAULT, "cudaMalloc");
    rt_free_fn f = (rt_free_fn)sym(RTLD_DEFAULT, "cudaFree");
    if (!m || !f) return note("runtime_alloc", "-1 cudaMalloc not found");
    void *churn = NULL, *keep = NULL;
    int r1 = m(&churn, CHURN_BYTES);
    int r2 = r1 ? 0 : f(churn);
    int r3 = m(&keep, RT_BYTES);
    note("runtime_alloc", "%d", r1 ? r1 : r2 ? r2 : r3);
}

__attribute__((noinline)) static void probe_driver(void) {
    lw_pfn_cuMemAlloc_v3020 m = (lw_pfn_cuMemAlloc_v3020)sym(RTLD_DEFAULT, "cuMemAlloc_v2");
    lw_pfn_cuMemFree_v3020 f = (lw_pfn_cuMemFree_v3020)sym(RTLD_DEFAULT, "cuMemFree_v2");
    if (!m || !f) return note("driver_alloc", "-1 cuMemAlloc_v2 not found");
    CUdeviceptr churn = 0, keep = 0;
    int r1 = m(&churn, CHURN_BYTES);
    int r2 = r1 ? 0 : f(churn);
    int r3 = m(&keep, DRV_BYTES);
    note("driver_alloc", "%d", r1 ? r1 : r2 ? r2 : r3);
}

__attribute__((noinline)) static void probe_async(void) {
    rt_malloc_async_fn m = (rt_malloc_async_fn)sym(RTLD_DEFAULT, "cudaMallocAsync");
    rt_free_async_fn f = (rt_free_async_fn)sym(RTLD_DEFAULT, "cudaFreeAsync");
    rt_sync_fn sync = (rt_sync_fn)sym(RTLD_DEFAULT, "cudaDeviceSynchronize");
    if (!m || !f) return note("async_alloc", "-1 cudaMallocAsync not found");
    void *churn = NULL, *keep = NULL;
    int r1 = m(&churn, CHURN_BYTES, NULL);
    int r2 = r1 ? 0 : f(churn, NULL);
    int r3 = m(&keep, ASYNC_BYTES, NULL);
    if (sync) sync();
    note("async_alloc", "%d", r1 ? r1 : r2 ? r2 : r3);
}

__attribute__((noinline)) static void probe_vmm(void) {
    granularity_fn gran = (granularity_fn)sym(RTLD_DEFAULT, "cuMemGetAllocationGranularity");
    reserve_fn reserve = (reserve_fn)sym(RTLD_DEFAULT, "cuMemAddressReserve");
    lw_pfn_cuMemCreate_v10020 create = (lw_pfn_cuMemCreate_v10020)sym(RTLD_DEFAULT, "cuMemCreate");
    lw_pfn_cuMemMap_v10020 map = (lw_pfn_cuMemMap_v10020)sym(RTLD_DEFAULT, "cuMemMap");
    if (!gran || !reserve || !create || !map) return note("vmm_alloc", "-1 0 VMM not found");
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t g = 0;
    int r = gran(&g, &prop, 0);
    if (r || !g) return note("vmm_alloc", "%d 0", r ? r : -1);
    size_t size = 2 * g;
    CUmemGenericAllocationHandle h = 0;
    CUdeviceptr va = 0;
    r = create(&h, size, &prop, 0);
    if (!r) r = reserve(&va, size, 0, 0, 0);
    if (!r) r = map(va, size, 0, h, 0);
    note("vmm_alloc", "%d %zu", r, size);
}

static int probe_main(const char *file) {
    probe_out = fopen(file, "w");
    if (!probe_out) return 1;
    real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
    if (!real_dlsym) real_dlsym = (dlsym_fn)dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5");
    int (*enabled)(void) = (int (*)(void))sym(RTLD_DEFAULT, "leakwatch_enabled");
    note("shim", "%d %s", enabled ? enabled() : -1, enabled ? path_of((void *)enabled) : "-");
    void *rt = open_runtime();
    if (!rt) {
        note("runtime", "- %s", dlerror());
    } else {
        rt_version_fn rv = (rt_version_fn)sym(rt, "cudaRuntimeGetVersion");
        int v = 0;
        if (rv) rv(&v);
        note("runtime", "%d %s", v, path_of(rv));
    }
    /* RTLD_GLOBAL: the driver's functions are then found by name, as for a
     * program linked to libcuda.so.1. */
    void *drv = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (!drv) {
        note("driver", "- %s", dlerror());
        fclose(probe_out);
        return 0;
    }
    void *any = sym(drv, "cuInit");
    int (*dv_fn)(int *) = (int (*)(int *))sym(drv, "cuDriverGetVersion");
    int dv = 0;
    if (dv_fn) dv_fn(&dv);
    note("driver", "%d %s", dv, path_of(any));
    note("stand_in", "%d", sym(drv, "fake_cuda_calls") != NULL);
    if (!rt) {
        fclose(probe_out);
        return 0;
    }
    int (*count)(int *) = (int (*)(int *))sym(rt, "cudaGetDeviceCount");
    int n = 0, r = count ? count(&n) : -1;
    note("devices", "%d %d", r, n);
    if (r == 0 && n > 0) {
        probe_runtime();
        probe_driver();
        probe_async();
        probe_vmm();
    }
    fclose(probe_out);
    return 0;
}

/* ================= the checklist (runs in the command) ================= */

typedef struct {
    char key[32];
    char value[PATH_MAX + 64];
} probe_line;

static int n_lines;
static probe_line lines[32];

static const char *probe_value(const char *key) {
    for (int i = 0; i < n_lines; i++)
        if (!strcmp(lines[i].key, key)) return lines[i].value;
    return NULL;
}

static void read_probe(const char *file) {
    FILE *f = fopen(file, "r");
    n_lines = 0;
    if (!f) return;
    char buf[PATH_MAX + 128];
    while (n_lines < 32 && fgets(buf, sizeof buf, f)) {
        buf[strcspn(buf, "\n")] = '\0';
        char *sp = strchr(buf, ' ');
        if (!sp) continue;
        *sp = '\0';
        snprintf(lines[n_lines].key, sizeof lines[n_lines].key, "%.31s", buf);
        snprintf(lines[n_lines].value, sizeof lines[n_lines].value, "%.*s",
                 (int)sizeof lines[n_lines].value - 1, sp + 1);
        n_lines++;
    }
    fclose(f);
}

static int problems;

static void item(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void item(int ok, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  %-7s ", ok > 0 ? "ok" : ok == 0 ? "MISSING" : "skipped");
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
    if (ok == 0) problems++;
}

static void todo(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void todo(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("          -> ", stdout);
    vprintf(fmt, ap);
    putchar('\n');
    va_end(ap);
}

/* How long a probe may run (--timeout): a driver whose cuInit hangs must
 * not keep doctor silent for minutes. */
static long probe_timeout_s = 120;

/* Runs argv with env added to ours (and LD_PRELOAD composed with the shim),
 * output to log; waits at most probe_timeout_s (saying so after 5 s).
 * Returns the exit code, -1, or -2 when it was killed for taking too long. */
static int run_child(char *const argv[], const char *shim, const char *cuda_libs,
                     const char *report, const char *log) {
    pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        /* A probe that hangs (a driver's cuInit, an import that never
         * returns) ends with doctor, however doctor ends (timeout(1)'s
         * SIGTERM, a closed terminal): it is not left running. */
        prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
        if (getppid() != parent) _exit(127); /* doctor ended meanwhile */
        int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        char *pre = lw_run_preload(shim, getenv("LD_PRELOAD"));
        if (pre) setenv("LD_PRELOAD", pre, 1);
        if (cuda_libs) {
            const char *old = getenv("LD_LIBRARY_PATH");
            char *v = malloc(strlen(cuda_libs) + (old ? strlen(old) : 0) + 2);
            if (v) {
                sprintf(v, "%s%s%s", cuda_libs, old && *old ? ":" : "", old && *old ? old : "");
                setenv("LD_LIBRARY_PATH", v, 1);
            }
        }
        setenv("LEAKWATCH_REPORT", report, 1);
        setenv("LEAKWATCH_QUIET", "1", 1);
        unsetenv("LEAKWATCH_DISABLE");
        execvp(argv[0], argv);
        _exit(127);
    }
    int st = 0;
    for (int waited = 0;; waited++) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid) break;
        if (w < 0 && errno != EINTR) return -1;
        if (waited == 5 * 20 && probe_timeout_s > 5) {
            printf("        (the probe is still running after 5 s; waiting up to %ld s in all: "
                   "--timeout S)\n",
                   probe_timeout_s);
            fflush(stdout);
        }
        if (waited >= probe_timeout_s * 20) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            return -2;
        }
        struct timespec ts = {0, 50 * 1000000L};
        nanosleep(&ts, NULL);
    }
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* The live bytes the report holds for the site whose stack names fn; -1 when
 * no such site. */
static long long site_bytes(const lw_json *report, const char *fn, int *named) {
    const lw_json *sites = lw_json_get(report, "sites");
    for (size_t i = 0; i < lw_json_len(sites); i++) {
        const lw_json *frames = lw_json_get(lw_json_at(sites, i), "frames");
        for (size_t j = 0; j < lw_json_len(frames); j++) {
            const char *f = lw_json_string(lw_json_get(lw_json_at(frames, j), "function"));
            if (f && !strcmp(f, fn)) {
                long long v = -1;
                lw_json_int64(lw_json_get(lw_json_at(sites, i), "live_bytes"), &v);
                *named = 1;
                return v;
            }
        }
    }
    return -1;
}

static void check_path(const lw_json *report, const char *label, const char *key, const char *fn,
                       long long want, const char *kind_path, int *stacks_seen) {
    const char *v = probe_value(key);
    int rc = v ? atoi(v) : -1;
    if (rc != 0) {
        item(0, "%s: the probe's allocation failed (CUDA error %s)", label, v ? v : "?");
        todo("the driver refused it: see the error code in the CUDA documentation");
        return;
    }
    char want_s[32];
    lw_fmt_bytes((double)want, want_s, sizeof want_s);
    int named = 0;
    long long got = report ? site_bytes(report, fn, &named) : -1;
    if (named) *stacks_seen = 1;
    if (got == want) {
        item(1, "%s: %lld bytes (%s) seen, exactly", label, want, want_s);
        return;
    }
    long long kind = -1;
    if (report) lw_json_int64(lw_json_path(report, kind_path), &kind);
    if (got < 0 && kind >= want) {
        item(1, "%s: %s seen (call stack not named, see below)", label, want_s);
        return;
    }
    item(0, "%s: allocated %lld bytes, leakwatch saw %lld", label, want, got < 0 ? 0 : got);
    todo("this path is not followed: please report it with the output of this command");
}

static int check_torch(const char *python, const char *shim, const char *cuda_libs,
                       const char *dir) {
    static const char script[] =
        "import sys\n"
        "try:\n"
        "    import torch\n"
        "except Exception as e:\n"
        "    print('no_torch', type(e).__name__, e); sys.exit(0)\n"
        "print('torch_version', torch.__version__)\n"
        "print('torch_cuda', torch.version.cuda)\n"
        "ok = torch.cuda.is_available()\n"
        "print('cuda_available', int(ok))\n"
        "if not ok: sys.exit(0)\n"
        "print('backend', torch.cuda.memory.get_allocator_backend())\n"
        "def doctor_tensor():\n"
        "    return torch.empty(11 * 2**20, dtype=torch.uint8, device='cuda')\n"
        "t = doctor_tensor()\n"
        "torch.cuda.synchronize()\n"
        "print('tensor_bytes', t.numel())\n";
    char report[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(report, sizeof report, "%s/torch.json", dir);
    snprintf(log, sizeof log, "%s/torch.txt", dir);
    char *argv[] = {(char *)python, "-c", (char *)script, NULL};
    int rc = run_child(argv, shim, cuda_libs, report, log);
    if (rc == 127) {
        item(-1, "PyTorch: %s not found: not checked (--python PY to name one)", python);
        return 0;
    }
    read_probe(log);
    const char *no = probe_value("no_torch");
    if (no) {
        item(-1, "PyTorch: %s cannot import torch (%s): not checked", python, no);
        return 0;
    }
    const char *ver = probe_value("torch_version");
    if (!ver) {
        item(0, "PyTorch: the probe did not run (exit %d); its output is in %s", rc, log);
        return 1;
    }
    const char *cu = probe_value("torch_cuda");
    item(1, "PyTorch %s (built for CUDA %s)", ver, cu ? cu : "?");
    const char *avail = probe_value("cuda_available");
    if (!avail || strcmp(avail, "1") != 0) {
        item(-1, "PyTorch: torch.cuda.is_available() is False: tensor probe not run");
        return 0;
    }
    const char *backend = probe_value("backend");
    item(1, "PyTorch allocator backend in effect: %s", backend ? backend : "?");
    char err[256];
    lw_json *rep = lw_json_parse_file(report, NULL, err, sizeof err);
    if (!rep) {
        item(0, "PyTorch: no report from the shim (%s)", err);
        todo("was libleakwatch.so preloaded into python? see %s", log);
        return 1;
    }
    long long live = -1;
    lw_json_int64(lw_json_path(rep, "totals.live_bytes"), &live);
    if (live >= 11LL << 20)
        item(1, "PyTorch tensor: 11 MiB tensor seen (%lld bytes live in CUDA memory)", live);
    else {
        item(0, "PyTorch tensor: 11 MiB allocated, leakwatch saw %lld bytes live", live);
        todo("PyTorch's allocations are not followed: please report it with this output");
    }
    int named = 0;
    site_bytes(rep, "doctor_tensor", &named);
    if (named)
        item(1, "Python frames: the tensor's Python function is named in its call site");
    else {
        item(0, "Python frames: the tensor's call site has no Python frames");
        todo("this Python's frames are not read: see docs/limits.md for the versions "
             "supported");
    }
    lw_json_free(rep);
    return 0;
}

static void remove_dir(const char *dir) {
    static const char *const files[] = {"probe.txt", "probe.json", "probe.log", "torch.json",
                                        "torch.txt"};
    char p[PATH_MAX + 32];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

int lw_cmd_doctor(int argc, char **argv) {
    if (argc == 3 && !strcmp(argv[1], "--probe")) return probe_main(argv[2]);
    enum { O_CUDA_LIBS = 256, O_STAND_INS, O_LIBRARY, O_PYTHON, O_TIMEOUT };
    static const struct option opts[] = {{"cuda-libs", required_argument, NULL, O_CUDA_LIBS},
                                         {"cuda-stand-ins", no_argument, NULL, O_STAND_INS},
                                         {"library", required_argument, NULL, O_LIBRARY},
                                         {"python", required_argument, NULL, O_PYTHON},
                                         {"timeout", required_argument, NULL, O_TIMEOUT},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    const char *cuda_libs = NULL, *library = NULL, *python = "python3";
    int c, stand_ins = 0;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case O_CUDA_LIBS:
            cuda_libs = optarg;
            break;
        case O_STAND_INS:
            stand_ins = 1;
            break;
        case O_LIBRARY:
            library = optarg;
            break;
        case O_PYTHON:
            python = optarg;
            break;
        case O_TIMEOUT:
            if (lw_parse_long(optarg, 1, 3600, &probe_timeout_s) != 0)
                return lw_cli_usage_error("doctor", "--timeout needs a number of seconds (1 to "
                                                    "3600)");
            break;
        default: /* -h, --help; a bad option */
            return lw_cli_other_option("doctor", c, argv, usage);
        }
    }
    if (optind < argc)
        return lw_cli_usage_error("doctor", "unexpected argument '%s'", argv[optind]);
    char libs_abs[PATH_MAX];
    if (stand_ins && cuda_libs)
        return lw_cli_usage_error("doctor", "--cuda-stand-ins and --cuda-libs: give one");
    if (stand_ins) {
        char err0[1024];
        if (lw_run_find_stand_ins(libs_abs, sizeof libs_abs, err0, sizeof err0) != 0) {
            lw_cli_error("%s", err0);
            return LW_EXIT_ERROR;
        }
        cuda_libs = libs_abs;
    } else if (cuda_libs) {
        if (!realpath(cuda_libs, libs_abs)) {
            lw_cli_error("--cuda-libs %s: no such folder; give the folder that holds "
                         "libcuda.so.1 (and libcudart.so)",
                         cuda_libs);
            return LW_EXIT_USAGE;
        }
        cuda_libs = libs_abs;
    }
    char shim[PATH_MAX], err[512];
    printf("leakwatch doctor\n");
    if (lw_run_find_library(library, shim, sizeof shim, err, sizeof err) != 0) {
        item(0, "leakwatch library: %s", err);
        return LW_EXIT_ERROR;
    }
    char self[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", self, sizeof self - 1);
    if (l <= 0) {
        lw_cli_error("cannot find this program's own path (/proc/self/exe); is /proc mounted?");
        return LW_EXIT_ERROR;
    }
    self[l] = '\0';
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/leakwatch-doctor.XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        lw_cli_error("cannot make a folder under %s: %s", tmp && *tmp ? tmp : "/tmp",
                     strerror(errno));
        return LW_EXIT_ERROR;
    }
    char probe_file[PATH_MAX + 16], report[PATH_MAX + 16], log[PATH_MAX + 16];
    snprintf(probe_file, sizeof probe_file, "%s/probe.txt", dir);
    snprintf(report, sizeof report, "%s/probe.json", dir);
    snprintf(log, sizeof log, "%s/probe.log", dir);
    char *pargv[] = {self, "doctor", "--probe", probe_file, NULL};
    int rc = run_child(pargv, shim, cuda_libs, report, log), keep_dir = 0;
    read_probe(probe_file);

    const char *v = probe_value("shim");
    if (rc == -2) {
        /* Not the library's fault as far as anyone can tell: say what hung,
         * and keep the folder with its output (the message points there). */
        item(0,
             "the probe did not finish in %ld s and was stopped: the CUDA driver's "
             "initialization (cuInit) or its first calls hang here%s",
             probe_timeout_s, v && v[0] != '-' ? " (leakwatch's library was loaded)" : "");
        todo("check the GPU with nvidia-smi; the probe's output is in %s; wait longer with "
             "--timeout S",
             log);
        return LW_EXIT_ERROR;
    }
    if (rc != 0 || !v || v[0] == '-') {
        item(0, "leakwatch library %s: the probe did not run under it (exit %d)", shim, rc);
        todo("run 'LD_PRELOAD=%s true' to see the loader's message; the probe's output is in %s",
             shim, log);
        return LW_EXIT_ERROR; /* the folder stays: the message names its log */
    }
    item(1, "leakwatch library: %s", shim);

    const char *drv = probe_value("driver"), *rt = probe_value("runtime");
    int stand_in = probe_value("stand_in") && atoi(probe_value("stand_in"));
    if (!drv || drv[0] == '-') {
        item(0, "CUDA driver: libcuda.so.1 cannot be loaded (%s)", drv ? drv + 2 : "?");
        todo("no NVIDIA driver here, so no GPU: run this on the GPU machine; to check "
             "leakwatch itself on its CPU stand-ins: leakwatch doctor --cuda-stand-ins");
    } else {
        int dv = atoi(drv);
        const char *path = strchr(drv, ' ');
        item(1, "CUDA driver: %s, CUDA %d.%d%s", path ? path + 1 : "?", dv / 1000, (dv % 1000) / 10,
             stand_in ? " (leakwatch's CPU stand-in, not NVIDIA's)" : "");
    }
    if (!rt || rt[0] == '-') {
        item(-1, "CUDA runtime: no libcudart.so found (%s): runtime probes not run",
             rt ? rt + 2 : "?");
        todo("set CUDA_HOME, or pass --cuda-libs DIR with the folder of libcudart.so");
    } else {
        int rv = atoi(rt);
        const char *path = strchr(rt, ' ');
        item(1, "CUDA runtime: %s, CUDA %d.%d", path ? path + 1 : "?", rv / 1000, (rv % 1000) / 10);
    }
    const char *devs = probe_value("devices");
    int dev_rc = devs ? atoi(devs) : -1, n_dev = 0;
    if (devs && strchr(devs, ' ')) n_dev = atoi(strchr(devs, ' ') + 1);
    int gpu = devs && dev_rc == 0 && n_dev > 0 && !stand_in;
    if (stand_in)
        item(-1, "GPU: none (the probes ran on leakwatch's CPU stand-ins, %d devices)", n_dev);
    else if (gpu)
        item(1, "GPU: %d device%s", n_dev, n_dev == 1 ? "" : "s");
    else if (drv && drv[0] != '-' && rt && rt[0] != '-') {
        item(0, "GPU: none found (cudaGetDeviceCount: error %d)", dev_rc);
        todo("check nvidia-smi and CUDA_VISIBLE_DEVICES");
    }

    if (devs && dev_rc == 0 && n_dev > 0) {
        char err2[256];
        lw_json *rep = lw_json_parse_file(report, NULL, err2, sizeof err2);
        if (!rep) {
            item(0, "report: the shim wrote none (%s)", err2);
            todo("see %s", log);
            keep_dir = 1;
        }
        int stacks = 0;
        check_path(rep, "runtime (cudaMalloc)", "runtime_alloc", "probe_runtime", RT_BYTES,
                   "totals.by_kind.device.live_bytes", &stacks);
        check_path(rep, "driver (cuMemAlloc)", "driver_alloc", "probe_driver", DRV_BYTES,
                   "totals.by_kind.device.live_bytes", &stacks);
        check_path(rep, "stream-ordered pool (cudaMallocAsync)", "async_alloc", "probe_async",
                   ASYNC_BYTES, "totals.by_kind.device.live_bytes", &stacks);
        const char *vmm = probe_value("vmm_alloc");
        long long vmm_bytes = vmm && strchr(vmm, ' ') ? atoll(strchr(vmm, ' ') + 1) : 0;
        check_path(rep, "virtual memory (cuMemCreate)", "vmm_alloc", "probe_vmm", vmm_bytes,
                   "totals.by_kind.physical.live_bytes", &stacks);
        if (stacks)
            item(1, "call stacks: the probes' functions are named in their call sites");
        else {
            item(0, "call stacks: no call site names the probes' functions");
            todo("is this leakwatch binary stripped? sites will show addresses only");
        }
        lw_json_free(rep);
    }
    if (check_torch(python, shim, cuda_libs, dir)) {
        problems++;
        keep_dir = 1; /* its messages may name torch.txt */
    }
    if (!keep_dir) remove_dir(dir);
    if (problems) {
        printf("%d problem%s: see the lines marked MISSING\n", problems, problems == 1 ? "" : "s");
        return LW_EXIT_ERROR;
    }
    printf("all is well%s\n", gpu ? "" : " (no GPU here: only leakwatch itself was checked)");
    return LW_EXIT_OK;
}
