/* SPDX-License-Identifier: Apache-2.0 */
#include "torch_info.h"

#include "report_fields.h"
#include "torch_text.h"
#include "torch_values.h"

#include "log.h"

#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

enum { S_SITES, S_DIAGNOSIS, S_BACKEND, S_STEPS, S_HOST_OWNER, S_COUNT };
static const char *const names[S_COUNT] = {"sites", "diagnosis", "backend", "steps", "host_owner"};
/* The paths each section's values may have (a path is under one when it
 * starts with it, then ends or goes on with '.' or '['). */
static const char *const under[S_COUNT][4] = {
    [S_SITES] = {"sites[]"},
    [S_DIAGNOSIS] = {"torch.diagnosis"},
    [S_BACKEND] = {"torch.backend"},
    [S_STEPS] = {"torch.steps"},
    [S_HOST_OWNER] = {"sites[].owner", "sites[].owners", "sites[].owner_search"},
};
/* Where the sections go under the report's "torch", in its rows' order. */
static const lw_field torch_rows[S_COUNT] = {[S_DIAGNOSIS] = LW_FIELD_torch_diagnosis,
                                             [S_BACKEND] = LW_FIELD_torch_backend,
                                             [S_STEPS] = LW_FIELD_torch_steps};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static lw_tv *trees[S_COUNT];
static uint32_t host_site; /* the library's site host_owner is about */
static char *label;
static char *owner;     /* what keeps the leak alive: the label's text after a newline */
static char *host_text; /* host_owner's sentence */
static char unit_name[32], unit_module[128];
static int said[S_COUNT];

#define TEXT 4096

/* ---- what the helper may hand ---- */

static int is_under(const char *path, int s) {
    for (int i = 0; i < 4 && under[s][i]; i++) {
        size_t l = strlen(under[s][i]);
        if (!strncmp(path, under[s][i], l) && (!path[l] || path[l] == '.' || path[l] == '['))
            return 1;
    }
    return 0;
}

/* The library's own words, never the helper's: a place's label and an
 * owner's sentence. */
static int derived(lw_field f) {
    return f == LW_FIELD_WHERE_label || f == LW_FIELD_sites_owner_text ||
           f == LW_FIELD_sites_owners_text;
}

static lw_tv_node *sites_of(lw_tv *t) {
    return lw_tv_member(lw_tv_root(t), LW_FIELD_sites);
}

static double rate_of(const lw_tv_node *site) {
    double r = lw_tv_num(site, LW_KEY(sites_bytes_per_step));
    return isfinite(r) ? r : 0;
}

/* ---- the store ---- */

int lw_torch_info_values(const char *section, uint32_t site, const lw_tv_value *v, size_t n,
                         const char *message) {
    int s = -1;
    for (int i = 0; section && i < S_COUNT; i++)
        if (!strcmp(section, names[i])) s = i;
    if (s < 0 || (n && !v) || n > LW_TORCH_INFO_MAX_VALUES || (s == S_HOST_OWNER && !site))
        return -1;
    lw_tv *t = lw_tv_new();
    if (!t) return -1;
    size_t refused = 0;
    for (size_t i = 0; i < n; i++) {
        const lw_tv_value *x = &v[i];
        int ok = x->path && is_under(x->path, s) && !derived(lw_tv_find(x->path)) &&
                 (s != S_HOST_OWNER || x->index[0] == 0);
        if (!ok || lw_tv_add(t, x) != 0) refused++;
    }
    if (n && refused == n) {
        lw_tv_free(t);
        return -1;
    }
    char *lab = NULL, *own = NULL, *host = NULL;
    lw_tv_node *sites = sites_of(t);
    if (s == S_SITES || s == S_HOST_OWNER)
        for (lw_tv_node *e = lw_tv_first(sites); e; e = lw_tv_next(e))
            if (lw_tv_type(e) == LW_TV_OBJECT) lw_torch_text_site(t, e);
    if (s == S_SITES) {
        lab = lw_torch_text_label(sites);
        char *nl = lab ? strchr(lab, '\n') : NULL;
        if (nl) {
            *nl = '\0';
            own = nl[1] ? strdup(nl + 1) : NULL;
        }
    } else if (s == S_HOST_OWNER) {
        char text[TEXT];
        if (lw_torch_text_line(lw_tv_member(lw_tv_first(sites), LW_FIELD_sites_owner),
                               LW_KEY(sites_owner_text), text, sizeof text))
            host = strdup(text);
    }
    pthread_mutex_lock(&lock);
    lw_tv *old = trees[s];
    trees[s] = t;
    if (s == S_SITES) {
        free(label);
        label = lab;
        free(owner);
        owner = own;
    } else if (s == S_HOST_OWNER) {
        host_site = site;
        free(host_text);
        host_text = host;
    }
    int say = s != S_SITES && s != S_HOST_OWNER && message && *message && !said[s];
    if (say) said[s] = 1;
    pthread_mutex_unlock(&lock);
    lw_tv_free(old);
    if (say && !lw_log_quiet) lw_log("%s", message);
    return (int)refused;
}

int lw_torch_info_values_packed(const char *section, uint32_t site, const char *paths,
                                size_t paths_size, size_t npaths, const int *cells,
                                const double *numbers, const char *texts, size_t ntexts, size_t n,
                                const char *message) {
    if (n > LW_TORCH_INFO_MAX_VALUES) return -1;
    char *copy = NULL;
    lw_tv_value *v =
        lw_tv_unpack(paths, paths_size, npaths, cells, numbers, texts, ntexts, n, &copy);
    int rc = v ? lw_torch_info_values(section, site, v, n, message) : -1;
    free(v);
    free(copy);
    return rc;
}

int lw_torch_info_present(void) {
    pthread_mutex_lock(&lock);
    int any = unit_name[0] != '\0';
    for (int s = 0; s < S_COUNT; s++)
        any |= trees[s] != NULL;
    pthread_mutex_unlock(&lock);
    return any;
}

size_t lw_torch_info_emit_sites(lw_jw *w, size_t limit) {
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (lw_tv_node *e = lw_tv_first(sites_of(trees[S_SITES])); e && n < limit;
         e = lw_tv_next(e), n++)
        lw_tv_write(w, NULL, e);
    pthread_mutex_unlock(&lock);
    return n;
}

size_t lw_torch_info_sites(double *top_bytes_per_step) {
    pthread_mutex_lock(&lock);
    const lw_tv_node *sites = sites_of(trees[S_SITES]);
    size_t n = lw_tv_count(sites);
    if (top_bytes_per_step) *top_bytes_per_step = n ? rate_of(lw_tv_first(sites)) : 0;
    pthread_mutex_unlock(&lock);
    return n;
}

void lw_torch_info_emit_fields(lw_jw *w) {
    pthread_mutex_lock(&lock);
    for (int s = S_DIAGNOSIS; s <= S_STEPS; s++) {
        const lw_tv_node *torch = lw_tv_member(lw_tv_root(trees[s]), LW_FIELD_torch);
        const lw_tv_node *n = lw_tv_member(torch, torch_rows[s]);
        if (n) lw_tv_write(w, lw_report_field_key(torch_rows[s]), n);
    }
    pthread_mutex_unlock(&lock);
}

static const char *copy_out(const char *s, char *out, size_t n) {
    if (!s || !n) return NULL;
    snprintf(out, n, "%s", s);
    return out;
}

const char *lw_torch_info_label(char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = copy_out(label, out, n);
    pthread_mutex_unlock(&lock);
    return r;
}

const char *lw_torch_info_owner(char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = copy_out(owner, out, n);
    pthread_mutex_unlock(&lock);
    return r;
}

int lw_torch_info_host_owner_emit(lw_jw *w, uint32_t site_id) {
    pthread_mutex_lock(&lock);
    const lw_tv_node *e = lw_tv_first(sites_of(trees[S_HOST_OWNER]));
    int any = site_id && site_id == host_site && e;
    /* Its members, as members of the site's own object. */
    if (any) lw_tv_write_members(w, e);
    pthread_mutex_unlock(&lock);
    return any;
}

const char *lw_torch_info_host_owner_text(uint32_t site_id, char *out, size_t n) {
    pthread_mutex_lock(&lock);
    const char *r = site_id && site_id == host_site ? copy_out(host_text, out, n) : NULL;
    pthread_mutex_unlock(&lock);
    return r;
}

int lw_torch_info_answer_members(lw_jw *w) {
    pthread_mutex_lock(&lock);
    const lw_tv_node *top = lw_tv_first(sites_of(trees[S_SITES]));
    const lw_tv_node *id = lw_tv_member(top, LW_FIELD_sites_id);
    int any = id != NULL;
    if (any) {
        lw_tv_write(w, LW_KEY(answer_site), id);
        const lw_tv_node *where = lw_tv_member(top, LW_FIELD_sites_where);
        if (where)
            lw_tv_write(w, LW_KEY(answer_where), where);
        else
            lw_jw_null(w, LW_KEY(answer_where));
    }
    pthread_mutex_unlock(&lock);
    return any;
}

/* ---- what a step is ---- */

int lw_torch_info_step_unit(char *unit, size_t un, char *module, size_t mn) {
    pthread_mutex_lock(&lock);
    int have = unit_name[0] != '\0';
    if (have && un) snprintf(unit, un, "%s", unit_name);
    if (module && mn) snprintf(module, mn, "%s", have ? unit_module : "");
    pthread_mutex_unlock(&lock);
    return have;
}

/* An identifier, dotted or not, shorter than 128 bytes (a class's name). */
static int plain_name(const char *s) {
    size_t n = 0;
    for (; s && s[n]; n++)
        if (!((s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
              (s[n] >= '0' && s[n] <= '9') || s[n] == '_' || s[n] == '.'))
            return 0;
    return n > 0 && n < 128;
}

int lw_torch_info_step_unit_set(const char *unit, const char *module) {
    if (!unit || (strcmp(unit, "module_call") && strcmp(unit, "optimizer_step"))) return -1;
    pthread_mutex_lock(&lock);
    snprintf(unit_name, sizeof unit_name, "%s", unit);
    snprintf(unit_module, sizeof unit_module, "%s", plain_name(module) ? module : "");
    pthread_mutex_unlock(&lock);
    return 0;
}

/* The string value of "key" in the helper's compact JSON text (json.dumps
 * with separators (",", ":"), so no space follows the colon), without
 * escapes: the unit and the module's class name are identifiers. */
static int string_value(const char *text, const char *key, char *out, size_t n) {
    char pat[32];
    snprintf(pat, sizeof pat, "\"%s\":\"", key);
    const char *k = text ? strstr(text, pat) : NULL;
    if (!k || !n) return 0;
    k += strlen(pat);
    size_t i = 0;
    for (; k[i] && k[i] != '"' && k[i] != '\\' && i + 1 < n; i++)
        out[i] = k[i];
    out[i] = '\0';
    return i > 0;
}

int lw_torch_info_step_unit_json(const char *json) {
    char unit[32], module[128];
    if (!string_value(json, "unit", unit, sizeof unit)) return -1;
    return lw_torch_info_step_unit_set(
        unit, string_value(json, "module", module, sizeof module) ? module : NULL);
}

void lw_torch_info_forget(void) {
    for (int s = 0; s < S_COUNT; s++) {
        lw_tv_free(trees[s]);
        trees[s] = NULL;
        said[s] = 0;
    }
    host_site = 0;
    unit_name[0] = unit_module[0] = '\0';
    free(label);
    label = NULL;
    free(owner);
    owner = NULL;
    free(host_text);
    host_text = NULL;
}
