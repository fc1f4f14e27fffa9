/* SPDX-License-Identifier: Apache-2.0 */
/* A simulated training job for the accuracy benchmark (bench/accuracy): per
 * step it allocates and frees transients (activations), may leak from
 * leak_site(), and shapes the floor of live memory with a warm-up ramp,
 * caching-allocator staircases, a KV-cache sawtooth, saturating growth,
 * fragmentation-like churn and noise of a given standard deviation. Links the
 * (fake) runtime dynamically; runs with or without the shim.
 *
 * The floor of step s (the lowest live bytes between two step marks) is, by
 * construction,
 *     F(s) = base + leaked(s) + warm-up(s) + staircases(s) + sawtooth(s)
 *            + saturating(s) + churn pool(s) + noise(s)
 * and is reached once per step, when the step's transients are all freed. A
 * "carry" block (the next batch, prefetched) is held across each step mark
 * and freed in the next step while its transients are live, so the live
 * bytes at a mark exceed the floors of both steps around it: a sampler that
 * restarts its minimum from the live bytes at a mark still sees F(s) exactly.
 *
 * Noise: the floor's deviation from its trend, e(s), has standard deviation
 * --noise exactly: e(s) is Gaussian , independent from
 * step to step, or AR(1) with --noise-ar RHO (same marginal sigma); each
 * innovation is the sum of 12 uniforms less 6 (variance exactly 1, bounded
 * by 6). It is held as one block (noise_site) of 6 sigma + e(s), allocated
 * before the previous step's block is freed.
 *
 * Usage: rt_workload [options]   (sizes take K, M, G, T suffixes, powers of 2)
 *   --steps N            steps to run (2000)
 *   --seed N             random seed (1)
 *   --base SIZE          held from the start (weights, optimizer state)
 *   --transient SIZE     allocated and freed within each step (all threads)
 *   --transient-chunks K allocations those transients are split into (64)
 *   --leak SIZE          bytes leaked per leak event, one allocation, leak_site()
 *   --leak-every K       one leak event every K steps (1)
 *   --leak-start S       first step that leaks (0)
 *   --leak-thread T      thread that leaks (the last one)
 *   --noise SIGMA        standard deviation of the floor's noise
 *   --noise-ar RHO       lag-1 autocorrelation of that noise (0)
 *   --warmup SIZE:STEPS  ramp of SIZE over the first STEPS steps, then flat
 *   --staircase SEG:everyN:untilM[:fromF]  a SEG segment every N steps from
 *                        step F (0) until step M; repeatable (4)
 *   --sawtooth SIZE:periodP  a cache growing by SIZE/P per step, emptied every P
 *   --saturate SIZE:tauT growth to SIZE as 1 - exp(-s/T) (bounded: no leak)
 *   --churn N:MAX        N blocks of 512 B..MAX (log-uniform) held across steps;
 *                        a quarter replaced by fresh ones each step
 *   --threads T          threads doing the steps, in lockstep (1)
 *   --marked 0|1         call leakwatch_step() at each step's end (1)
 *   --step-ms MS         sleep this long at each step's end (0); under
 *                        LEAKWATCH_TEST_CLOCK=1 it moves leakwatch's test
 *                        clock instead (test_clock.h)
 *   --carry SIZE         the block held across step marks (auto; 0: none)
 *   --trace FILE         write "step F(s) lowest-live-bytes-seen" for each step
 * At the end it prints one line: "rt_workload: steps=... wall_s=... ", with
 * floor_mismatch=N: the steps whose lowest live bytes (after any free, or at
 * the previous mark) were not F(s); 0 unless the construction is broken. */
#include "paths.h"
#include "test_clock.h"

#include <dlfcn.h>
#include <errno.h>
#include <getopt.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

cudaError_t cudaMalloc(void **p, size_t s);
cudaError_t cudaFree(void *p);

#define GRAN ((size_t)512)
#define MAX_THREADS 64
#define MAX_STAIRS 4

/* ---- the spec ---- */

typedef struct {
    size_t seg;
    long every, until, from;
} stair_spec;

static struct {
    long steps, seed;
    size_t base, transient;
    long chunks;
    size_t leak;
    long leak_every, leak_start, leak_thread;
    double noise, noise_ar;
    size_t warm_size;
    long warm_steps;
    stair_spec stairs[MAX_STAIRS];
    int nstairs;
    size_t saw_size;
    long saw_period;
    size_t sat_size;
    double sat_tau;
    long churn_n;
    size_t churn_max;
    long threads;
    int marked;
    double step_ms;
    long carry; /* -1: auto */
    const char *trace;
} spec = {.steps = 2000,
          .seed = 1,
          .chunks = 64,
          .leak_every = 1,
          .leak_thread = -1,
          .threads = 1,
          .marked = 1,
          .carry = -1};

static void usage_error(const char *what, const char *text) {
    fprintf(stderr, "rt_workload: bad %s: '%s' (see the comment at the top of rt_workload.c)\n",
            what, text ? text : "");
    exit(2);
}

/* "512", "1K", "256M", "1.5G". */
static size_t parse_size(const char *s, const char *what) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || errno || v < 0) usage_error(what, s);
    double mult = 1;
    switch (*end) {
    case 'k':
    case 'K':
        mult = 1024.0, end++;
        break;
    case 'm':
    case 'M':
        mult = 1024.0 * 1024, end++;
        break;
    case 'g':
    case 'G':
        mult = 1024.0 * 1024 * 1024, end++;
        break;
    case 't':
    case 'T':
        mult = 1024.0 * 1024 * 1024 * 1024, end++;
        break;
    default:
        break;
    }
    if (*end == 'i') end++;
    if (*end == 'B' || *end == 'b') end++;
    if (*end != '\0') usage_error(what, s);
    return (size_t)(v * mult + 0.5);
}

static long parse_long(const char *s, const char *what) {
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 0);
    if (end == s || *end != '\0' || errno || v < 0) usage_error(what, s);
    return v;
}

static double parse_double(const char *s, const char *what) {
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno) usage_error(what, s);
    return v;
}

/* Splits "SIZE:key1N:key2M" into the size and up to 3 keyed numbers; keys
 * are matched by prefix ("every", "until", "from", "period", "tau"); a bare
 * number in place i is taken as keys[i]. */
static size_t parse_pattern(const char *arg, const char *what, const char *const *keys, int nkeys,
                            double *vals) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", arg);
    char *save = NULL;
    char *tok = strtok_r(buf, ":", &save);
    if (!tok) usage_error(what, arg);
    size_t size = parse_size(tok, what);
    int i = 0;
    while ((tok = strtok_r(NULL, ":", &save)) != NULL) {
        int k = -1;
        for (int j = 0; j < nkeys; j++)
            if (!strncmp(tok, keys[j], strlen(keys[j]))) {
                k = j;
                tok += strlen(keys[j]);
                break;
            }
        if (k < 0) k = i;
        if (k >= nkeys) usage_error(what, arg);
        vals[k] = parse_double(tok, what);
        i++;
    }
    return size;
}

static void parse_args(int argc, char **argv) {
    enum {
        O_STEPS = 1,
        O_SEED,
        O_BASE,
        O_TRANSIENT,
        O_CHUNKS,
        O_LEAK,
        O_LEAK_EVERY,
        O_LEAK_START,
        O_LEAK_THREAD,
        O_NOISE,
        O_NOISE_AR,
        O_WARMUP,
        O_STAIR,
        O_SAW,
        O_SAT,
        O_CHURN,
        O_THREADS,
        O_MARKED,
        O_STEP_MS,
        O_CARRY,
        O_TRACE
    };
    static const struct option opts[] = {{"steps", required_argument, NULL, O_STEPS},
                                         {"seed", required_argument, NULL, O_SEED},
                                         {"base", required_argument, NULL, O_BASE},
                                         {"transient", required_argument, NULL, O_TRANSIENT},
                                         {"transient-chunks", required_argument, NULL, O_CHUNKS},
                                         {"leak", required_argument, NULL, O_LEAK},
                                         {"leak-every", required_argument, NULL, O_LEAK_EVERY},
                                         {"leak-start", required_argument, NULL, O_LEAK_START},
                                         {"leak-thread", required_argument, NULL, O_LEAK_THREAD},
                                         {"noise", required_argument, NULL, O_NOISE},
                                         {"noise-ar", required_argument, NULL, O_NOISE_AR},
                                         {"warmup", required_argument, NULL, O_WARMUP},
                                         {"staircase", required_argument, NULL, O_STAIR},
                                         {"sawtooth", required_argument, NULL, O_SAW},
                                         {"saturate", required_argument, NULL, O_SAT},
                                         {"churn", required_argument, NULL, O_CHURN},
                                         {"threads", required_argument, NULL, O_THREADS},
                                         {"marked", required_argument, NULL, O_MARKED},
                                         {"step-ms", required_argument, NULL, O_STEP_MS},
                                         {"carry", required_argument, NULL, O_CARRY},
                                         {"trace", required_argument, NULL, O_TRACE},
                                         {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        double v[3] = {0, 0, 0};
        switch (c) {
        case O_STEPS:
            spec.steps = parse_long(optarg, "--steps");
            break;
        case O_SEED:
            spec.seed = parse_long(optarg, "--seed");
            break;
        case O_BASE:
            spec.base = parse_size(optarg, "--base");
            break;
        case O_TRANSIENT:
            spec.transient = parse_size(optarg, "--transient");
            break;
        case O_CHUNKS:
            spec.chunks = parse_long(optarg, "--transient-chunks");
            break;
        case O_LEAK:
            spec.leak = parse_size(optarg, "--leak");
            break;
        case O_LEAK_EVERY:
            spec.leak_every = parse_long(optarg, "--leak-every");
            break;
        case O_LEAK_START:
            spec.leak_start = parse_long(optarg, "--leak-start");
            break;
        case O_LEAK_THREAD:
            spec.leak_thread = parse_long(optarg, "--leak-thread");
            break;
        case O_NOISE:
            spec.noise = (double)parse_size(optarg, "--noise");
            break;
        case O_NOISE_AR:
            spec.noise_ar = parse_double(optarg, "--noise-ar");
            break;
        case O_WARMUP: {
            static const char *const k[] = {"steps"};
            spec.warm_size = parse_pattern(optarg, "--warmup", k, 1, v);
            spec.warm_steps = (long)v[0];
            if (spec.warm_steps <= 0) usage_error("--warmup", optarg);
            break;
        }
        case O_STAIR: {
            static const char *const k[] = {"every", "until", "from"};
            if (spec.nstairs == MAX_STAIRS) usage_error("--staircase (too many)", optarg);
            stair_spec *st = &spec.stairs[spec.nstairs++];
            v[1] = 1e18;
            st->seg = parse_pattern(optarg, "--staircase", k, 3, v);
            st->every = (long)v[0];
            st->until = v[1] > 1e17 ? spec.steps : (long)v[1];
            st->from = (long)v[2];
            if (st->every <= 0) usage_error("--staircase", optarg);
            break;
        }
        case O_SAW: {
            static const char *const k[] = {"period"};
            spec.saw_size = parse_pattern(optarg, "--sawtooth", k, 1, v);
            spec.saw_period = (long)v[0];
            if (spec.saw_period <= 0) usage_error("--sawtooth", optarg);
            break;
        }
        case O_SAT: {
            static const char *const k[] = {"tau"};
            spec.sat_size = parse_pattern(optarg, "--saturate", k, 1, v);
            spec.sat_tau = v[0];
            if (spec.sat_tau <= 0) usage_error("--saturate", optarg);
            break;
        }
        case O_CHURN: {
            char buf[128];
            snprintf(buf, sizeof buf, "%s", optarg);
            char *colon = strchr(buf, ':');
            if (!colon) usage_error("--churn", optarg);
            *colon = '\0';
            spec.churn_n = parse_long(buf, "--churn");
            spec.churn_max = parse_size(colon + 1, "--churn");
            if (spec.churn_max < GRAN) usage_error("--churn", optarg);
            break;
        }
        case O_THREADS:
            spec.threads = parse_long(optarg, "--threads");
            if (spec.threads < 1 || spec.threads > MAX_THREADS) usage_error("--threads", optarg);
            break;
        case O_MARKED:
            spec.marked = (int)parse_long(optarg, "--marked");
            break;
        case O_STEP_MS:
            spec.step_ms = parse_double(optarg, "--step-ms");
            break;
        case O_CARRY:
            spec.carry = (long)parse_size(optarg, "--carry");
            break;
        case O_TRACE:
            spec.trace = optarg;
            break;
        default:
            usage_error("option", argv[optind - 1]);
        }
    }
    if (optind < argc) usage_error("argument", argv[optind]);
    if (spec.leak_thread < 0 || spec.leak_thread >= spec.threads)
        spec.leak_thread = spec.threads - 1;
    if (spec.leak_every < 1) spec.leak_every = 1;
    if (spec.noise_ar <= -1 || spec.noise_ar >= 1) usage_error("--noise-ar", "must be in (-1,1)");
}

/* ---- deterministic random numbers ---- */

typedef struct {
    uint64_t s;
} rng;

static uint64_t rng_next(rng *r) {
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

static rng rng_make(uint64_t stream) {
    rng r = {(uint64_t)spec.seed * 0x2545F4914F6CDD1DULL ^ stream * 0x9E3779B97F4A7C15ULL};
    rng_next(&r);
    return r;
}

/* Uniform in (0, 1). */
static double rng_unit(rng *r) {
    return ((double)(rng_next(r) >> 11) + 0.5) / 9007199254740992.0;
}

/* Standard normal, nearly: the sum of 12 uniforms less 6 has mean 0 and
 * variance exactly 1, and is bounded by +-6 (so no clipping is needed). */
static double rng_gauss(rng *r) {
    double sum = 0;
    for (int i = 0; i < 12; i++)
        sum += rng_unit(r);
    return sum - 6.0;
}

/* The few functions of libm needed, so that the program links like the
 * other test programs (without -lm). */
static double m_exp(double x) {
    int k = 0;
    while (x > 0.5 || x < -0.5)
        x /= 2, k++;
    double term = 1, sum = 1;
    for (int i = 1; i < 24; i++)
        term *= x / i, sum += term;
    while (k-- > 0)
        sum *= sum;
    return sum;
}

static double m_log(double x) { /* x > 0 */
    double y = 0;
    while (x > 1e4)
        x /= 1e4, y += 9.210340371976184;
    while (x < 1e-4)
        x *= 1e4, y -= 9.210340371976184;
    double z = 0;
    for (int i = 0; i < 60; i++) {
        double e = m_exp(z);
        z += 2 * (x - e) / (x + e);
    }
    return y + z;
}

static double m_sqrt(double x) {
    if (x <= 0) return 0;
    double y = x > 1 ? x : 1;
    for (int i = 0; i < 200; i++)
        y = 0.5 * (y + x / y);
    return y;
}

static size_t round_gran(double bytes) {
    if (bytes <= 0) return 0;
    return (size_t)(bytes / (double)GRAN + 0.5) * GRAN;
}

/* ---- self-check: the program follows its own live bytes and the lowest
 * value after any free since the last step mark (as the shim does), and
 * counts the steps where that is not the floor F(s) it meant to make ---- */

static _Atomic long long live_bytes, window_min;

static void track_alloc(size_t n) {
    atomic_fetch_add(&live_bytes, (long long)n);
}

static void track_free(size_t n) {
    long long v = atomic_fetch_sub(&live_bytes, (long long)n) - (long long)n;
    long long m = atomic_load(&window_min);
    while (v < m && !atomic_compare_exchange_weak(&window_min, &m, v)) {
    }
}

/* ---- allocation sites: each pattern from its own function, so that the
 * report's sites can be told apart ---- */

/* cudaMalloc called from the site function itself: its innermost frame. */
#define SITE_ALLOC(n)                                                                              \
    void *p = NULL;                                                                                \
    CHECK(cudaMalloc(&p, n));                                                                      \
    track_alloc(n);                                                                                \
    return p

static void dev_free(void *p, size_t n) {
    if (!p) return;
    CHECK(cudaFree(p));
    track_free(n);
}

NOINLINE static void *leak_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *base_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *transient_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *warmup_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *staircase_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *sawtooth_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *saturate_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *churn_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *noise_site(size_t n) {
    SITE_ALLOC(n);
}
NOINLINE static void *carry_site(size_t n) {
    SITE_ALLOC(n);
}

/* ---- state ---- */

typedef struct {
    void **p;
    size_t len, cap;
} ptr_vec;

static void vec_push(ptr_vec *v, void *p) {
    if (v->len == v->cap) {
        v->cap = v->cap ? 2 * v->cap : 64;
        v->p = realloc(v->p, v->cap * sizeof *v->p);
        if (!v->p) abort();
    }
    v->p[v->len++] = p;
}

static void (*step_mark)(void);
static pthread_barrier_t barrier;
static size_t carry_size;

/* Bytes held by the patterns (what the floor is made of), for the summary. */
static struct {
    uint64_t leaked, leak_events, warm, stairs, saw, sat, churn, noise;
    int64_t floor_first, floor_last;
    uint64_t floor_mismatch;
} held;

static FILE *trace; /* --trace: "step floor measured" per step */

typedef struct {
    int id;
    long nchunks;
    size_t *chunk; /* the transients' sizes: the same shapes every step */
    void **live;
} worker;

/* Patterns and noise: thread 0, while the step's transients are live. */
static struct {
    ptr_vec saw;
    void **churn;
    size_t *churn_size;
    rng churn_rng, noise_rng;
    double noise_e, noise_k;
    double churn_lo, churn_hi; /* log of the smallest and largest churn block */
    void *noise_block;
    size_t noise_size;
    void *carry;
} g;

static size_t churn_draw(void) {
    return round_gran(m_exp(g.churn_lo + (g.churn_hi - g.churn_lo) * rng_unit(&g.churn_rng)));
}

static void setup(void) {
    size_t left = spec.base;
    while (left > 0) {
        size_t n = left > ((size_t)1 << 30) ? ((size_t)1 << 30) : left;
        base_site(n);
        left -= n;
    }
    g.churn_rng = rng_make(3);
    g.noise_rng = rng_make(4);
    g.churn_lo = m_log((double)GRAN);
    g.churn_hi = spec.churn_max ? m_log((double)spec.churn_max) : g.churn_lo;
    g.noise_k = m_sqrt(1.0 - spec.noise_ar * spec.noise_ar);
    if (spec.churn_n > 0) {
        g.churn = calloc((size_t)spec.churn_n, sizeof *g.churn);
        g.churn_size = calloc((size_t)spec.churn_n, sizeof *g.churn_size);
        for (long i = 0; i < spec.churn_n; i++) {
            g.churn_size[i] = churn_draw();
            g.churn[i] = churn_site(g.churn_size[i]);
            held.churn += g.churn_size[i];
        }
    }
    /* The carry must exceed the most the floor can rise in one step. */
    if (spec.carry >= 0) {
        carry_size = (size_t)spec.carry;
    } else {
        double rise = (double)spec.leak +
                      (spec.warm_steps ? (double)spec.warm_size / (double)spec.warm_steps : 0.0);
        for (int i = 0; i < spec.nstairs; i++)
            rise += (double)spec.stairs[i].seg;
        if (spec.saw_period) rise += (double)spec.saw_size / (double)spec.saw_period;
        if (spec.sat_tau > 0) rise += (double)spec.sat_size / spec.sat_tau;
        rise += (double)(spec.churn_n / 4 + 1) * (double)spec.churn_max;
        rise += 12.0 * spec.noise;
        carry_size = round_gran(rise + (double)(1 << 20));
    }
}

static size_t target_warm(long s) {
    if (!spec.warm_steps) return 0;
    if (s >= spec.warm_steps - 1) return spec.warm_size;
    return round_gran((double)spec.warm_size * (double)(s + 1) / (double)spec.warm_steps);
}

static size_t target_sat(long s) {
    if (spec.sat_tau <= 0) return 0;
    return round_gran((double)spec.sat_size * (1.0 - m_exp(-(double)(s + 1) / spec.sat_tau)));
}

/* Everything but the leak and the transients: thread 0, with transients live. */
static void shape_floor(long s) {
    size_t w = target_warm(s);
    if (w > held.warm) warmup_site(w - held.warm), held.warm = w;

    for (int i = 0; i < spec.nstairs; i++) {
        const stair_spec *st = &spec.stairs[i];
        if (s >= st->from && s < st->until && (s - st->from) % st->every == 0) {
            staircase_site(st->seg);
            held.stairs += st->seg;
        }
    }

    if (spec.saw_period) {
        size_t block = round_gran((double)spec.saw_size / (double)spec.saw_period);
        if (s % spec.saw_period == 0) {
            for (size_t i = 0; i < g.saw.len; i++)
                dev_free(g.saw.p[i], block);
            g.saw.len = 0;
            held.saw = 0;
        }
        if (block) vec_push(&g.saw, sawtooth_site(block)), held.saw += block;
    }

    size_t t = target_sat(s);
    if (t > held.sat) saturate_site(t - held.sat), held.sat = t;

    for (long k = 0; k < spec.churn_n / 4; k++) {
        long i = (long)(rng_next(&g.churn_rng) % (uint64_t)spec.churn_n);
        size_t n = churn_draw();
        void *fresh = churn_site(n);
        dev_free(g.churn[i], g.churn_size[i]);
        held.churn += n;
        held.churn -= g.churn_size[i];
        g.churn[i] = fresh;
        g.churn_size[i] = n;
    }

    if (spec.noise > 0) {
        double z = rng_gauss(&g.noise_rng);
        double rho = spec.noise_ar;
        g.noise_e = s == 0 ? z : rho * g.noise_e + g.noise_k * z;
        double e = g.noise_e > 6 ? 6 : g.noise_e < -6 ? -6 : g.noise_e;
        size_t n = round_gran(spec.noise * (6.0 + e));
        void *fresh = n ? noise_site(n) : NULL;
        dev_free(g.noise_block, g.noise_size);
        g.noise_block = fresh;
        g.noise_size = n;
        held.noise = n;
    }

    if (g.carry) dev_free(g.carry, carry_size), g.carry = NULL;
}

static int64_t floor_now(void) {
    return (int64_t)(spec.base + held.leaked + held.warm + held.stairs + held.saw + held.sat +
                     held.churn + held.noise);
}

static void sleep_ms(double ms) {
    if (ms <= 0) return;
    /* Under leakwatch's test clock the step's time is the run's, not slept. */
    if (test_clock_advance_us((long)(ms * 1000))) return;
    long long ns = (long long)(ms * 1e6);
    struct timespec ts = {(time_t)(ns / 1000000000), (long)(ns % 1000000000)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
}

static void sync_threads(void) {
    if (spec.threads > 1) pthread_barrier_wait(&barrier);
}

NOINLINE static void run_step(worker *w, long s) {
    /* Forward: the activations. */
    for (long i = 0; i < w->nchunks; i++)
        w->live[i] = transient_site(w->chunk[i]);
    if (w->id == spec.leak_thread && spec.leak && s >= spec.leak_start &&
        (s - spec.leak_start) % spec.leak_every == 0) {
        leak_site(spec.leak);
        held.leaked += spec.leak;
        held.leak_events++;
    }
    sync_threads(); /* every thread's forward done (and the leak made) */
    if (w->id == 0) shape_floor(s);
    /* Backward: freed in reverse. */
    for (long i = w->nchunks - 1; i >= 0; i--)
        dev_free(w->live[i], w->chunk[i]);
    sync_threads(); /* every thread's transients freed: live bytes = F(s) */
    if (w->id == 0) {
        int64_t f = floor_now();
        if (s == 0) held.floor_first = f;
        held.floor_last = f;
        /* Step 0's stretch began at the program's start, with nothing live. */
        if (s > 0 && atomic_load(&window_min) != f) held.floor_mismatch++;
        if (trace) fprintf(trace, "%ld %lld %lld\n", s, (long long)f, atomic_load(&window_min));
        if (carry_size) g.carry = carry_site(carry_size);
        if (spec.marked && step_mark) step_mark();
        atomic_store(&window_min, atomic_load(&live_bytes));
        sleep_ms(spec.step_ms);
    }
    sync_threads();
}

static void *worker_main(void *arg) {
    worker *w = arg;
    for (long s = 0; s < spec.steps; s++)
        run_step(w, s);
    return NULL;
}

static void worker_init(worker *w, int id) {
    long per = (spec.chunks + spec.threads - 1) / spec.threads;
    long first = per * id;
    long n = spec.transient && first < spec.chunks
                 ? (first + per <= spec.chunks ? per : spec.chunks - first)
                 : 0;
    w->id = id;
    w->nchunks = n;
    w->chunk = calloc((size_t)(n ? n : 1), sizeof *w->chunk);
    w->live = calloc((size_t)(n ? n : 1), sizeof *w->live);
    rng r = rng_make(100 + (uint64_t)id);
    double avg = spec.chunks ? (double)spec.transient / (double)spec.chunks : 0;
    for (long i = 0; i < n; i++) {
        size_t sz = round_gran(avg * (0.5 + rng_unit(&r)));
        w->chunk[i] = sz ? sz : GRAN;
    }
}

int main(int argc, char **argv) {
    parse_args(argc, argv);
    if (spec.trace && !(trace = fopen(spec.trace, "w"))) {
        perror(spec.trace);
        return 2;
    }
    atomic_store(&window_min, 0);
    *(void **)&step_mark = dlsym(RTLD_DEFAULT, "leakwatch_step");
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    setup();

    worker *w = calloc((size_t)spec.threads, sizeof *w);
    for (int i = 0; i < spec.threads; i++)
        worker_init(&w[i], i);
    if (spec.threads > 1) {
        pthread_barrier_init(&barrier, NULL, (unsigned)spec.threads);
        pthread_t tid[MAX_THREADS];
        for (int i = 1; i < spec.threads; i++)
            if (pthread_create(&tid[i], NULL, worker_main, &w[i]) != 0) {
                fprintf(stderr, "rt_workload: pthread_create failed\n");
                return 2;
            }
        worker_main(&w[0]);
        for (int i = 1; i < spec.threads; i++)
            pthread_join(tid[i], NULL);
    } else {
        worker_main(&w[0]);
    }
    /* The carry goes, so the last (unmarked) stretch ends at the floor; the
     * rest stays allocated, as at the exit of a real job. */
    dev_free(g.carry, carry_size);
    g.carry = NULL;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double wall = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    printf("rt_workload: steps=%ld marked=%d shim=%d threads=%ld wall_s=%.3f leaked_bytes=%llu "
           "leak_events=%llu floor_first=%lld floor_last=%lld carry=%zu floor_mismatch=%llu\n",
           spec.steps, spec.marked, step_mark != NULL, spec.threads, wall,
           (unsigned long long)held.leaked, (unsigned long long)held.leak_events,
           (long long)held.floor_first, (long long)held.floor_last, carry_size,
           (unsigned long long)held.floor_mismatch);
    if (trace) fclose(trace);
    return 0;
}
