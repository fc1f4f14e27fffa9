/* SPDX-License-Identifier: Apache-2.0 */
/* A place's label and an owner's sentence (owner_text.h). */
#include "owner_text.h"

#include "fmt.h"
#include "where.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

char *lw_owner_where_label(const lw_tv_node *where, char *out, size_t n) {
    double line = lw_tv_num(where, LW_KEY(WHERE_line));
    lw_frame_ref f = {.python = 1,
                      .function = lw_tv_str(where, LW_KEY(WHERE_function)),
                      .file = lw_tv_str(where, LW_KEY(WHERE_file)),
                      .line = isfinite(line) && line > 0 && line < 1e9 ? (int)line : 0};
    return lw_where_label(&f, out, n);
}

static void add(char *out, size_t n, size_t *o, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void add(char *out, size_t n, size_t *o, const char *fmt, ...) {
    if (*o >= n) return;
    va_list ap;
    va_start(ap, fmt);
    int w = vsnprintf(out + *o, n - *o, fmt, ap);
    va_end(ap);
    if (w > 0) *o = *o + (size_t)w < n ? *o + (size_t)w : n - 1;
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
    add(where, sizeof where, &w, "%s", or_q(lw_tv_str(o, LW_KEY(sites_owner_scope))));
    if (file && *file && isfinite(line) && line != 0)
        add(where, sizeof where, &w, ", %s:%s", base_name(file), lw_fmt_int(line, a, sizeof a));
    const char *name = or_q(lw_tv_str(o, LW_KEY(sites_owner_name)));
    const char *hint = or_q(lw_tv_str(o, LW_KEY(sites_owner_hint)));
    double nodes = lw_tv_num(o, LW_KEY(sites_owner_graph_nodes));
    double passes = lw_tv_num(o, LW_KEY(sites_owner_passes));
    if (!strcmp(shape, "graph_item")) {
        add(out, n, at,
            "`%s` (%s) is a tensor holding an autograd graph of %s nodes (%s %s, %s forward "
            "passes): %s",
            name, where, lw_fmt_count(nodes, a, sizeof a),
            lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_graph_top_count)), b, sizeof b),
            or_q(lw_tv_str(o, LW_KEY(sites_owner_graph_top))), lw_fmt_count(passes, c, sizeof c),
            hint);
        return;
    }
    double count = lw_tv_num(o, LW_KEY(sites_owner_count));
    add(out, n, at, "kept by %s `%s` (%s): %s %s%s, %s",
        or_q(lw_tv_str(o, LW_KEY(sites_owner_kind))), name, where, lw_fmt_count(count, a, sizeof a),
        !strcmp(shape, "pinned") ? "pinned host tensor" : "tensor", count != 1 ? "s" : "",
        lw_fmt_bytes(lw_tv_num(o, LW_KEY(sites_owner_bytes)), b, sizeof b));
    const char *why = !strcmp(shape, "no_grad")        ? " (grad mode on, no backward)"
                      : !strcmp(shape, "retain_graph") ? " (backward ran with retain_graph=True)"
                      : !strcmp(shape, "detach")       ? " (backward ran)"
                                                       : NULL;
    if (why) {
        add(out, n, at, " in the saved tensors of autograd graphs of %s nodes",
            lw_fmt_count(nodes, a, sizeof a));
        if (isfinite(passes) && passes != 0)
            add(out, n, at, " (%s forward passes)", lw_fmt_count(passes, a, sizeof a));
        add(out, n, at, "%s", why);
    }
    add(out, n, at, "; %s", hint);
}

/* No name leads to the blocks: what holds them without one, what was
 * searched, why the search stopped. */
static void not_found(const lw_tv_node *o, const lw_tv_node *s, char *out, size_t n, size_t *at) {
    char a[32], b[32], c[32], d[32], e[32];
    double tensors = lw_tv_num(o, LW_KEY(sites_owner_unnamed_tensors));
    add(out, n, at, "owner not found: ");
    if (isfinite(tensors) && tensors > 0) {
        add(out, n, at, "%s tensor%s in its blocks", lw_fmt_count(tensors, a, sizeof a),
            tensors != 1 ? "s" : "");
        const char *holder = lw_tv_str(o, LW_KEY(sites_owner_unnamed_holder));
        if (holder)
            add(out, n, at, ", %s of them held by a %s of %s elements",
                lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_unnamed_held)), a, sizeof a), holder,
                lw_fmt_count(lw_tv_num(o, LW_KEY(sites_owner_unnamed_elements)), b, sizeof b));
        add(out, n, at, " that no local of your frames or global of your modules leads to");
    } else {
        add(out, n, at, "none of them leads to these blocks");
    }
    add(out, n, at,
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
        add(out, n, at, " (search stopped: %s%s)", stopped,
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
