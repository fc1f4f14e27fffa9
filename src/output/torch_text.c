/* SPDX-License-Identifier: Apache-2.0 */
/* The library's words from the PyTorch helper's values (torch_text.h). */
#include "torch_text.h"

#include "fmt.h"
#include "where.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

char *lw_owner_where_label(const lw_tv_node *where, char *out, size_t n) {
    double line = lw_tv_num(where, LW_KEY(WHERE_line));
    lw_frame_ref f = {.python = 1,
                      .function = lw_tv_str(where, LW_KEY(WHERE_function)),
                      .file = lw_tv_str(where, LW_KEY(WHERE_file)),
                      .line = isfinite(line) && line > 0 && line < 1e9 ? (int)line : 0};
    return lw_where_label(&f, out, n);
}

static const char *base_name(const char *p) {
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static const char *or_q(const char *s) {
    return s ? s : "None";
}

/* A named owner: the helper's _describe, as it said it. */
static void named(const lw_tv_node *o, char *out, size_t n, size_t *at) {
    char a[32], b[32], c[32], where[1024];
    const char *shape = or_q(lw_tv_str(o, LW_KEY(sites_owner_shape)));
    const char *file = lw_tv_str(o, LW_KEY(sites_owner_file));
    double line = lw_tv_num(o, LW_KEY(sites_owner_line));
    size_t w = 0;
    lw_fmt_add(where, sizeof where, &w, "%s", or_q(lw_tv_str(o, LW_KEY(sites_owner_scope))));
    if (file && *file && isfinite(line) && line != 0)
        lw_fmt_add(where, sizeof where, &w, ", %s:%s", base_name(file),
                   lw_fmt_int(line, a, sizeof a));
    const char *name = or_q(lw_tv_str(o, LW_KEY(sites_owner_name)));
    const char *hint = or_q(lw_tv_str(o, LW_KEY(sites_owner_hint)));
    double nodes = lw_tv_num(o, LW_KEY(sites_owner_graph_nodes));
    double passes = lw_tv_num(o, LW_KEY(sites_owner_passes));
    if (!strcmp(shape, "graph_item")) {
        lw_fmt_add(out, n, at,
                   "`%s` (%s) is a tensor holding an autograd graph of %s nodes (%s %s, %s forward "
                   "passes): %s",
                   name, where, lw_fmt_count(nodes, a, sizeof a),
                   lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_graph_top_count)), b, sizeof b),
                   or_q(lw_tv_str(o, LW_KEY(sites_owner_graph_top))),
                   lw_fmt_count(passes, c, sizeof c), hint);
        return;
    }
    double count = lw_tv_num(o, LW_KEY(sites_owner_count));
    lw_fmt_add(out, n, at, "kept by %s `%s` (%s): %s %s%s, %s",
               or_q(lw_tv_str(o, LW_KEY(sites_owner_kind))), name, where,
               lw_fmt_count(count, a, sizeof a),
               !strcmp(shape, "pinned") ? "pinned host tensor" : "tensor", count != 1 ? "s" : "",
               lw_fmt_bytes(lw_tv_num(o, LW_KEY(sites_owner_bytes)), b, sizeof b));
    const char *why = !strcmp(shape, "no_grad")        ? " (grad mode on, no backward)"
                      : !strcmp(shape, "retain_graph") ? " (backward ran with retain_graph=True)"
                      : !strcmp(shape, "detach")       ? " (backward ran)"
                                                       : NULL;
    if (why) {
        lw_fmt_add(out, n, at, " in the saved tensors of autograd graphs of %s nodes",
                   lw_fmt_count(nodes, a, sizeof a));
        if (isfinite(passes) && passes != 0)
            lw_fmt_add(out, n, at, " (%s forward passes)", lw_fmt_count(passes, a, sizeof a));
        lw_fmt_add(out, n, at, "%s", why);
    }
    lw_fmt_add(out, n, at, "; %s", hint);
}

/* No name leads to the blocks: what holds them without one, what was
 * searched, why the search stopped. */
static void not_found(const lw_tv_node *o, const lw_tv_node *s, char *out, size_t n, size_t *at) {
    char a[32], b[32], c[32], d[32], e[32];
    double tensors = lw_tv_num(o, LW_KEY(sites_owner_unnamed_tensors));
    lw_fmt_add(out, n, at, "owner not found: ");
    if (isfinite(tensors) && tensors > 0) {
        lw_fmt_add(out, n, at, "%s tensor%s in its blocks", lw_fmt_count(tensors, a, sizeof a),
                   tensors != 1 ? "s" : "");
        const char *holder = lw_tv_str(o, LW_KEY(sites_owner_unnamed_holder));
        if (holder)
            lw_fmt_add(
                out, n, at, ", %s of them held by a %s of %s elements",
                lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_unnamed_held)), a, sizeof a), holder,
                lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_unnamed_elements)), b, sizeof b));
        lw_fmt_add(out, n, at, " that no local of your frames or global of your modules leads to");
    } else {
        lw_fmt_add(out, n, at, "none of them leads to these blocks");
    }
    lw_fmt_add(
        out, n, at,
        "; searched %s names (the locals of %s of your functions on the stack, the globals of %s "
        "of your modules), %s objects below them (attributes, containers, closures, default "
        "arguments) and %s autograd graph nodes",
        lw_fmt_count(lw_tv_num(s, LW_KEY(sites_owner_search_roots)), a, sizeof a),
        lw_fmt_count(lw_tv_num(s, LW_KEY(sites_owner_search_frames)), b, sizeof b),
        lw_fmt_count(lw_tv_num(s, LW_KEY(sites_owner_search_modules)), c, sizeof c),
        lw_fmt_count(lw_tv_num(s, LW_KEY(sites_owner_search_objects)), d, sizeof d),
        lw_fmt_count(lw_tv_num(s, LW_KEY(sites_owner_search_graph_nodes)), e, sizeof e));
    const char *stopped = lw_tv_str(s, LW_KEY(sites_owner_search_stopped));
    if (stopped && *stopped)
        lw_fmt_add(out, n, at, " (search stopped: %s%s)", stopped,
                   !strncmp(stopped, "error", 5) ? "" : " budget");
}

char *lw_owner_text(const lw_tv_node *owner, const lw_tv_node *search, char *out, size_t n) {
    size_t at = 0;
    if (!n) return out;
    out[0] = '\0';
    if (lw_tv_str(owner, LW_KEY(sites_owner_name)))
        named(owner, out, n, &at);
    else
        not_found(owner, search, out, n, &at);
    return out;
}

#define TEXT 4096

void lw_torch_text_site(lw_tv *t, lw_tv_node *site) {
    char text[TEXT];
    lw_tv_node *where = lw_tv_member(site, LW_FIELD_sites_where);
    if (lw_tv_type(where) == LW_TV_OBJECT)
        lw_tv_set_str(t, where, LW_FIELD_WHERE_label, lw_owner_where_label(where, text, TEXT));
    const lw_tv_node *search = lw_tv_member(site, LW_FIELD_sites_owner_search);
    lw_tv_node *own = lw_tv_member(site, LW_FIELD_sites_owner);
    if (lw_tv_type(own) == LW_TV_OBJECT)
        lw_tv_set_str(t, own, LW_FIELD_sites_owner_text, lw_owner_text(own, search, text, TEXT));
    for (lw_tv_node *o = lw_tv_first(lw_tv_member(site, LW_FIELD_sites_owners)); o;
         o = lw_tv_next(o))
        if (lw_tv_type(o) == LW_TV_OBJECT)
            lw_tv_set_str(t, o, LW_FIELD_sites_owners_text, lw_owner_text(o, search, text, TEXT));
}

static double rate_of(const lw_tv_node *site) {
    double r = lw_tv_num(site, LW_KEY(sites_bytes_per_step));
    return isfinite(r) ? r : 0;
}

int lw_torch_text_line(const lw_tv_node *n, const char *key, char *out, size_t size) {
    const char *s = lw_tv_str(n, key);
    if (!s || !*s) return 0;
    snprintf(out, size, "%s", s);
    for (char *c = out; *c; c++)
        if (*c == '\n') *c = ' ';
    return 1;
}

char *lw_torch_text_label(const lw_tv_node *sites) {
    const lw_tv_node *first = lw_tv_first(sites);
    if (!first) return NULL;
    size_t cap = 8192, o = 0;
    char *out = malloc(cap), text[2048], note[512];
    if (!out) return NULL;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        int w_ = snprintf(out + o, cap - o, __VA_ARGS__);                                          \
        if (w_ > 0) o = o + (size_t)w_ < cap ? o + (size_t)w_ : cap - 1;                           \
    } while (0)
    if (!lw_torch_text_line(lw_tv_member(first, LW_FIELD_sites_where), LW_KEY(WHERE_label), text,
                            sizeof text))
        snprintf(text, sizeof text, "?");
    PUT("%s", text);
    if (lw_torch_text_line(first, LW_KEY(sites_note), note, sizeof note)) PUT(" (%s)", note);
    int owned = lw_torch_text_line(lw_tv_member(first, LW_FIELD_sites_owner),
                                   LW_KEY(sites_owner_text), text, sizeof text);
    if (owned) PUT("\n%s", text);
    double top = rate_of(first);
    const lw_tv_node *s = lw_tv_next(first);
    for (int i = 1; s && i < 3; i++, s = lw_tv_next(s)) {
        double rate = rate_of(s);
        if (!(top > 0) || rate < top / 10 || rate <= 0) break;
        char rs[64];
        if (!lw_torch_text_line(lw_tv_member(s, LW_FIELD_sites_where), LW_KEY(WHERE_label), text,
                                sizeof text))
            snprintf(text, sizeof text, "?");
        PUT("%s\nalso leaking: %s: %s", i == 1 && !owned ? "\n" : "", text,
            lw_fmt_rate(rate, "step", rs, sizeof rs));
        const lw_tv_node *own = lw_tv_member(s, LW_FIELD_sites_owner);
        if (lw_torch_text_line(own, LW_KEY(sites_owner_name), note, sizeof note) &&
            lw_torch_text_line(own, LW_KEY(sites_owner_text), text, sizeof text))
            PUT("; %s", text);
    }
#undef PUT
    return out;
}
