/* SPDX-License-Identifier: Apache-2.0 */
/* The anatomy of device memory and the post-mortem at out-of-memory
 * (anatomy.h). */
#include "anatomy.h"

#include "report_fields.h"

#include "growth.h"
#include "site_name.h"

#include "device.h"
#include "runstate.h"
#include "sites.h"
#include "totals.h"

#include "fmt.h"

#include "clock.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#define AN_DEVICES 16
#define OOM_ERROR 2 /* cudaErrorMemoryAllocation, CUDA_ERROR_OUT_OF_MEMORY */

typedef struct {
    int have;
    uint32_t step;
    int64_t v[LW_AN_COUNT];
} sample;

/* The post-mortem's facts: the sample of that moment (or, without PyTorch,
 * what leakwatch itself knows) and the cause chosen from them. */
typedef struct {
    int have, torch, device;
    uint32_t step;
    double time_s;
    uint64_t count; /* out-of-memory errors seen */
    int64_t v[LW_AN_COUNT];
    int64_t leak, live; /* live: leakwatch's own live device bytes (no PyTorch) */
    const char *cause;
    char evidence[400], remedy[400];
} oom_facts;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static sample latest[AN_DEVICES], peak[AN_DEVICES];
static oom_facts oom;
static _Atomic int observing;
static _Atomic int had_oom;
static uint64_t last_oom_report_ns;

static double now_s(void) {
    return (double)(lw_now_ns() - lw_start_time_ns()) / 1e9;
}

static int64_t roles_sum(const int64_t *v) {
    int64_t s = 0;
    for (int k = LW_AN_WEIGHTS; k <= LW_AN_OPTIMIZER_STATE; k++)
        if (v[k] > 0) s += v[k];
    return s;
}

/* What the leak holds on a device: the growth of the series that called it
 * since its onset (PyTorch's tensors on that device, else leakwatch's own
 * floor); 0 without a leak (or one only seen, not yet confirmed: the latest
 * evaluation's growth counts too). */
static int64_t leak_on(int device) {
    uint32_t now = lw_step_now();
    lw_torch_device_state t[8];
    int n = lw_growth_torch_get(t, 8, NULL, 0, NULL);
    for (int i = 0; i < n; i++) {
        if (t[i].device != device) continue;
        const lw_growth *l = &t[i].last;
        if (t[i].verdict != LW_VERDICT_LEAK && l->verdict != LW_VERDICT_LEAK) return 0;
        double since = isfinite(l->onset_x) ? l->onset_x : 0;
        double b = l->slope * ((double)now - since);
        return isfinite(b) && b > 0 ? (int64_t)b : 0;
    }
    lw_growth_state g;
    lw_growth_get(&g, NULL, 0, NULL);
    if (g.verdict != LW_VERDICT_LEAK || strcmp(g.memory_kind, "device")) return 0;
    double since = isfinite(g.last.onset_x) ? g.last.onset_x : 0;
    double b = g.last.slope * ((double)g.steps - since);
    return isfinite(b) && b > 0 ? (int64_t)b : 0;
}

/* ---- the cause ---- */

#define B(x, buf) lw_fmt_bytes((double)(x), buf, sizeof buf)

static void explain(oom_facts *f) {
    const int64_t *v = f->v;
    char a[32], b[32], c[32], d[32], e[32], g[32], h[32];
    int64_t total = v[LW_AN_TOTAL], request = v[LW_AN_REQUEST];
    if (!f->torch) {
        /* Without PyTorch: no roles, only growth and the step. */
        if (f->leak > 0 && f->leak * 4 >= f->live) {
            f->cause = "leak";
            snprintf(f->evidence, sizeof f->evidence,
                     "memory kept step after step holds %s of the %s live on the device at "
                     "step %u (a request of %s failed)",
                     B(f->leak, a), B(f->live, b), f->step, B(request, c));
            snprintf(f->remedy, sizeof f->remedy,
                     "fix the leak: the place it keeps memory from is named below");
        } else if (f->step == 0) {
            f->cause = "model_and_optimizer";
            snprintf(f->evidence, sizeof f->evidence,
                     "before the first step: what the program holds (%s live) and a request of "
                     "%s do not fit in %s",
                     B(f->live, a), B(request, b), B(total, c));
            snprintf(f->remedy, sizeof f->remedy,
                     "hold less at once: lower precision (fp16/bf16), fewer trainable parameters "
                     "(LoRA), an 8-bit optimizer, sharding (ZeRO/FSDP) or offloading to the CPU");
        } else {
            f->cause = "activations";
            snprintf(f->evidence, sizeof f->evidence,
                     "at step %u the step in flight needs more than the device has (%s live, "
                     "a request of %s, %s in all; growth from step to step holds %s of it)",
                     f->step, B(f->live, a), B(request, b), B(total, c), B(f->leak, d));
            snprintf(f->remedy, sizeof f->remedy,
                     "a smaller batch or sequence (gradient accumulation keeps the effective "
                     "batch), gradient checkpointing, mixed precision");
        }
        return;
    }
    int64_t allocated = v[LW_AN_ALLOCATED], reserved = v[LW_AN_RESERVED];
    int64_t model = roles_sum(v);
    int64_t rest = allocated - model > 0 ? allocated - model : 0;
    int64_t leak = f->leak < rest ? f->leak : rest;
    int64_t act = rest - leak;
    int64_t cached = reserved > allocated ? reserved - allocated : 0;
    int64_t outside = total > 0 && v[LW_AN_FREE] >= 0 ? total - v[LW_AN_FREE] - reserved : 0;
    if (outside < 0) outside = 0;
    f->leak = leak;
    if (cached >= request && request > 0 && total > 0 && cached * 10 >= total) {
        f->cause = "fragmentation";
        snprintf(f->evidence, sizeof f->evidence,
                 "PyTorch holds %s reserved but unallocated, more than the %s requested, in "
                 "pieces none of which fits it (tensors %s, the device %s)",
                 B(cached, a), B(request, b), B(allocated, c), B(total, d));
        snprintf(f->remedy, sizeof f->remedy,
                 "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segments that grow instead "
                 "of fixed pieces); or allocate the largest tensors first and free big "
                 "temporaries early");
        return;
    }
    int64_t best = model;
    f->cause = "model_and_optimizer";
    if (act > best) best = act, f->cause = "activations";
    if (leak > best) best = leak, f->cause = "leak";
    if (outside > best) best = outside, f->cause = "outside_pytorch";
    if (!strcmp(f->cause, "model_and_optimizer")) {
        snprintf(f->evidence, sizeof f->evidence,
                 "weights %s + gradients %s + optimizer state %s = %s of the device's %s at step "
                 "%u (a request of %s failed; activations %s)",
                 B(v[LW_AN_WEIGHTS], a), B(v[LW_AN_GRADIENTS], b), B(v[LW_AN_OPTIMIZER_STATE], c),
                 B(model, d), B(total, e), f->step, B(request, g), B(act, h));
        snprintf(f->remedy, sizeof f->remedy,
                 "mixed precision (bf16/fp16), LoRA or QLoRA (train few parameters), an 8-bit "
                 "optimizer, ZeRO/FSDP sharding, or offloading the optimizer state to the CPU");
    } else if (!strcmp(f->cause, "activations")) {
        snprintf(f->evidence, sizeof f->evidence,
                 "activations (the step's tensors) hold %s of the device's %s at step %u, "
                 "weights, gradients and optimizer state %s (a request of %s failed)",
                 B(act, a), B(total, b), f->step, B(model, c), B(request, d));
        snprintf(f->remedy, sizeof f->remedy,
                 "a smaller batch or sequence (gradient accumulation keeps the effective batch), "
                 "gradient checkpointing, mixed precision, FlashAttention");
    } else if (!strcmp(f->cause, "leak")) {
        snprintf(f->evidence, sizeof f->evidence,
                 "memory kept step after step holds %s of the device's %s at step %u "
                 "(weights, gradients and optimizer state %s, activations %s)",
                 B(leak, a), B(total, b), f->step, B(model, c), B(act, d));
        snprintf(f->remedy, sizeof f->remedy,
                 "fix the leak: the place it keeps memory from is named below");
    } else {
        snprintf(f->evidence, sizeof f->evidence,
                 "%s of the device's %s is used outside PyTorch's allocator (other libraries, "
                 "the CUDA context); PyTorch reserves %s",
                 B(outside, a), B(total, b), B(reserved, c));
        snprintf(f->remedy, sizeof f->remedy,
                 "find the library that holds it among the call sites outside PyTorch (NCCL "
                 "buffers, cuBLAS workspaces, another framework's pool) and shrink its "
                 "workspace or pool");
    }
}

/* Memory outside PyTorch: the call site holding the most device memory
 * (PyTorch's own segments are usually many and smaller), named in the
 * remedy. */
static void name_outside(void) {
    const lw_site *best = NULL;
    int64_t most = 0;
    for (lw_site *s = lw_sites_first(); s; s = s->next) {
        int64_t live = lw_site_live_bytes(s);
        if (live > most) most = live, best = s;
    }
    if (!best) return;
    char label[512], b[32];
    lw_site_label(best, label, sizeof label);
    pthread_mutex_lock(&lock);
    if (oom.cause && !strcmp(oom.cause, "outside_pytorch"))
        snprintf(oom.remedy, sizeof oom.remedy,
                 "the call site holding the most device memory is %.200s (%s): shrink or free "
                 "what it holds (a library's workspace or pool: NCCL buffers, cuBLAS "
                 "workspaces, another framework)",
                 label, lw_fmt_bytes((double)most, b, sizeof b));
    pthread_mutex_unlock(&lock);
}

/* ---- the helper's samples and out-of-memory ---- */

int lw_anatomy_torch(int device, int event, const long long *values, int n) {
    if (event == LW_AN_OBSERVING) {
        atomic_store(&observing, 1);
        return 0;
    }
    if (device < 0 || device >= AN_DEVICES || !values || n < LW_AN_COUNT) return 0;
    sample s = {1, lw_step_now(), {0}};
    for (int k = 0; k < LW_AN_COUNT; k++)
        s.v[k] = values[k];
    int64_t leak = event == LW_AN_OOM ? leak_on(device) : 0;
    pthread_mutex_lock(&lock);
    latest[device] = s;
    if (!peak[device].have || roles_sum(s.v) >= roles_sum(peak[device].v)) peak[device] = s;
    int due = 0;
    if (event == LW_AN_OOM) {
        uint64_t count = oom.count + 1;
        memset(&oom, 0, sizeof oom);
        oom.have = oom.torch = 1;
        oom.count = count;
        oom.device = device;
        oom.step = s.step;
        oom.time_s = now_s();
        memcpy(oom.v, s.v, sizeof oom.v);
        oom.leak = leak;
        explain(&oom);
        atomic_store(&had_oom, 1);
        lw_growth_note_oom();
        lw_device_note_mem(s.v[LW_AN_FREE], s.v[LW_AN_TOTAL]);
        due = 1;
    }
    int outside = due && !strcmp(oom.cause, "outside_pytorch");
    pthread_mutex_unlock(&lock);
    if (outside) name_outside();
    return due;
}

int lw_anatomy_alloc_failed(int kind, uint64_t size, int device, int result) {
    if (result != OOM_ERROR || kind != LW_KIND_DEVICE || atomic_load(&observing)) return 0;
    int64_t fr, total;
    lw_device_sample_now(); /* that moment's free memory, not the last second's */
    lw_device_last_mem(&fr, &total);
    lw_counts c = lw_totals_get(device, LW_KIND_COUNT);
    int64_t leak = leak_on(device);
    uint64_t now = lw_now_ns();
    pthread_mutex_lock(&lock);
    uint64_t count = oom.count + 1;
    memset(&oom, 0, sizeof oom);
    oom.have = 1;
    oom.count = count;
    oom.device = device;
    oom.step = lw_step_now();
    oom.time_s = now_s();
    for (int k = 0; k < LW_AN_COUNT; k++)
        oom.v[k] = -1;
    oom.v[LW_AN_REQUEST] = (int64_t)size;
    oom.v[LW_AN_FREE] = fr;
    oom.v[LW_AN_TOTAL] = total;
    oom.live = c.live_bytes;
    oom.leak = leak;
    explain(&oom);
    atomic_store(&had_oom, 1);
    lw_growth_note_oom();
    /* A program that probes (tries smaller until it fits) fails often: one
     * report a second at most; each failure still updates the facts. */
    int due = !last_oom_report_ns || now - last_oom_report_ns >= 1000000000ull;
    if (due) last_oom_report_ns = now;
    pthread_mutex_unlock(&lock);
    return due;
}

int lw_anatomy_had_oom(void) {
    return atomic_load(&had_oom);
}

int lw_anatomy_oom_get(char *cause, size_t cn, char *evidence, size_t en, char *remedy, size_t rn) {
    if (!atomic_load(&had_oom)) return 0;
    pthread_mutex_lock(&lock);
    snprintf(cause, cn, "%s", oom.cause ? oom.cause : "");
    snprintf(evidence, en, "%s", oom.evidence);
    snprintf(remedy, rn, "%s", oom.remedy);
    pthread_mutex_unlock(&lock);
    return 1;
}

/* ---- the report ---- */

static void opt_int(lw_jw *w, const char *key, int64_t v) {
    if (v >= 0)
        lw_jw_int(w, key, v);
    else
        lw_jw_null(w, key);
}

/* One moment's roles. allocated/reserved: PyTorch's (or its peaks). */
static void emit_roles(lw_jw *w, const char *key, const int64_t *v, int64_t allocated,
                       int64_t reserved, int64_t leak) {
    lw_jw_object(w, key);
    int64_t model = roles_sum(v);
    int64_t rest = allocated - model > 0 ? allocated - model : 0;
    if (leak > rest) leak = rest;
    opt_int(w, "weights", v[LW_AN_WEIGHTS]);
    opt_int(w, "gradients", v[LW_AN_GRADIENTS]);
    opt_int(w, "optimizer_state", v[LW_AN_OPTIMIZER_STATE]);
    opt_int(w, "activations", allocated >= 0 ? rest - leak : -1);
    opt_int(w, "cached_free",
            reserved >= 0 && allocated >= 0 && reserved >= allocated ? reserved - allocated : -1);
    int64_t outside = -1;
    if (v[LW_AN_TOTAL] > 0 && v[LW_AN_FREE] >= 0 && v[LW_AN_RESERVED] >= 0) {
        outside = v[LW_AN_TOTAL] - v[LW_AN_FREE] - v[LW_AN_RESERVED];
        if (outside < 0) outside = 0;
    }
    opt_int(w, "outside_pytorch", outside);
    opt_int(w, "leak", leak);
    lw_jw_end(w);
}

static void emit_torch_device(lw_jw *w, int d, const sample *now, const sample *pk) {
    int64_t leak = leak_on(d);
    lw_jw_object(w, NULL);
    lw_jw_int(w, "device", d);
    opt_int(w, "total_bytes", now->v[LW_AN_TOTAL]);
    lw_jw_int(w, "at_step", now->step);
    emit_roles(w, "now", now->v, now->v[LW_AN_ALLOCATED], now->v[LW_AN_RESERVED], leak);
    /* The peak: the roles when the model was largest, the activations from
     * PyTorch's peak of tensor memory. */
    int64_t pv[LW_AN_COUNT];
    memcpy(pv, pk->v, sizeof pv);
    emit_roles(w, "peak", pv, now->v[LW_AN_PEAK_ALLOCATED], now->v[LW_AN_PEAK_RESERVED], leak);
    lw_jw_end(w);
}

/* Without PyTorch's helper: the device's live bytes and what the leaking
 * sites hold; the roles are unknown (null). */
static void emit_site_device(lw_jw *w, int d, int64_t leak) {
    lw_counts c = lw_totals_get(d, LW_KIND_COUNT);
    int64_t fr, total;
    lw_device_last_mem(&fr, &total);
    lw_jw_object(w, NULL);
    lw_jw_int(w, "device", d);
    opt_int(w, "total_bytes", total);
    lw_jw_int(w, "at_step", lw_step_now());
    for (int k = 0; k < 2; k++) {
        lw_jw_object(w, k ? "peak" : "now");
        opt_int(w, "weights", -1);
        opt_int(w, "gradients", -1);
        opt_int(w, "optimizer_state", -1);
        opt_int(w, "activations", -1);
        opt_int(w, "cached_free", -1);
        opt_int(w, "outside_pytorch", -1);
        opt_int(w, "leak", k ? -1 : leak < c.live_bytes ? leak : c.live_bytes);
        lw_jw_end(w);
    }
    lw_jw_end(w);
}

static void emit_oom(lw_jw *w, const oom_facts *o) {
    if (!o->have) {
        lw_jw_null(w, LW_KEY(oom));
        return;
    }
    lw_jw_object(w, LW_KEY(oom));
    lw_jw_str(w, LW_KEY(oom_cause), o->cause);
    lw_jw_str(w, LW_KEY(oom_evidence), o->evidence);
    lw_jw_str(w, LW_KEY(oom_remedy), o->remedy);
    lw_jw_str(w, LW_KEY(oom_source), o->torch ? "pytorch_observer" : "allocation_failure");
    lw_jw_int(w, LW_KEY(oom_device), o->device);
    lw_jw_int(w, LW_KEY(oom_step), o->step);
    lw_jw_double(w, LW_KEY(oom_time_s), o->time_s);
    lw_jw_uint(w, LW_KEY(oom_count), o->count);
    opt_int(w, LW_KEY(oom_request_bytes), o->v[LW_AN_REQUEST]);
    opt_int(w, LW_KEY(oom_device_free_bytes), o->v[LW_AN_FREE]);
    opt_int(w, LW_KEY(oom_device_total_bytes), o->v[LW_AN_TOTAL]);
    opt_int(w, LW_KEY(oom_allocated_bytes), o->v[LW_AN_ALLOCATED]);
    opt_int(w, LW_KEY(oom_reserved_bytes), o->v[LW_AN_RESERVED]);
    opt_int(w, LW_KEY(oom_leak_bytes), o->leak);
    lw_jw_end(w);
}

static void add_leaking(lw_site *s, const lw_site_track *t, void *arg) {
    if (t->growth.verdict == LW_VERDICT_LEAK) *(int64_t *)arg += lw_site_live_bytes(s);
}

void lw_anatomy_emit(lw_jw *w) {
    sample now[AN_DEVICES], pk[AN_DEVICES];
    /* Copied under the lock, written without it (the growth's lock is
     * taken below). */
    pthread_mutex_lock(&lock);
    memcpy(now, latest, sizeof now);
    memcpy(pk, peak, sizeof pk);
    oom_facts f = oom;
    pthread_mutex_unlock(&lock);
    int torch = 0;
    for (int d = 0; d < AN_DEVICES; d++)
        torch |= now[d].have;
    lw_jw_object(w, "anatomy");
    lw_jw_str(w, "method", torch ? "pytorch" : "call_site");
    lw_jw_str(w, "note",
              torch ? "roles from PyTorch's optimizers and modules (each storage once) at the "
                      "helper's latest sample (at_step); peak: the roles when the model was "
                      "largest, activations from PyTorch's peak of tensor memory"
                    : "no PyTorch: the roles are unknown; the memory is split by call site "
                      "(sites[]), the leak is what the leaking sites hold");
    lw_jw_array(w, "devices");
    if (torch) {
        for (int d = 0; d < AN_DEVICES; d++)
            if (now[d].have) emit_torch_device(w, d, &now[d], &pk[d]);
    } else {
        int64_t leak = 0;
        lw_growth_each_site(add_leaking, &leak);
        uint64_t seen = lw_totals_devices_seen();
        for (int d = 0; d < LW_MAX_DEVICES && d < AN_DEVICES; d++)
            if (seen & (1ull << (d + 1))) emit_site_device(w, d, leak);
    }
    lw_jw_end(w);
    lw_jw_end(w);
    emit_oom(w, &f);
}

void lw_anatomy_lock_for_fork(void) {
    pthread_mutex_lock(&lock);
}

void lw_anatomy_unlock_after_fork(void) {
    pthread_mutex_unlock(&lock);
}

void lw_anatomy_forget(void) {
    memset(latest, 0, sizeof latest);
    memset(peak, 0, sizeof peak);
    memset(&oom, 0, sizeof oom);
    atomic_store(&observing, 0);
    atomic_store(&had_oom, 0);
    last_oom_report_ns = 0;
}
