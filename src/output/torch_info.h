/* SPDX-License-Identifier: Apache-2.0 */
/* What the PyTorch helper (python/leakwatch/_torch.py) learned in the job and
 * handed over for the report: the sites found in PyTorch's own allocation
 * history during a diagnosis window, the window itself, the allocator
 * backend in effect, how steps were counted. Each is a JSON text produced by
 * the helper (json.dumps), checked here and written into the report as is. */
#ifndef LW_TORCH_INFO_H
#define LW_TORCH_INFO_H

#include "json_write.h"

#include <stddef.h>
#include <stdint.h>

/* field: "sites" (a JSON array of site objects; message: the top site's
 * label for the summary line), "answer" (accepted, not used: the report's
 * answer names the first of the sites itself), "step_unit" (what a step is:
 * lw_torch_info_step_unit), "host_owner" (lw_torch_info_host_owner_emit;
 * its message is kept, never said), or "diagnosis", "backend", "steps" (a
 * JSON object each; message, if not NULL, is said once on stderr). A later call
 * replaces an earlier one. Returns 0, or -1 for an unknown field, a text
 * that is not JSON of the right type, or one over 1 MiB. */
int lw_torch_info_set(const char *field, const char *json, const char *message);

/* 1 when the helper handed anything over. */
int lw_torch_info_present(void);

/* Writes the "sites" elements into the array w is in; returns how many. */
size_t lw_torch_info_emit_sites(lw_jw *w, size_t limit);
/* The number of sites held, and the first one's leak rate (0 when none). */
size_t lw_torch_info_sites(double *top_bytes_per_step);
/* Writes "key": value for each object field held, in w's current object. */
void lw_torch_info_emit_fields(lw_jw *w);
/* Writes the answer's site under PyTorch's signal, the first of the
 * helper's sites: "site" (its id) and "where" (its where), into w's current
 * object (the report's "answer", answer.c's); returns 1, else 0 (no site
 * with an id). The helper's own "answer" field, which said the same, is
 * accepted and no longer used. */
int lw_torch_info_answer_members(lw_jw *w);
/* The top site's label, or NULL. Copies into out. */
const char *lw_torch_info_label(char *out, size_t n);
/* What keeps the top site's blocks alive (the helper's owner sentence: the
 * label's text after its first newline), or NULL. Copies into out. */
const char *lw_torch_info_owner(char *out, size_t n);

/* What keeps a pinned host leak's site alive (field "host_owner": {"site":
 * the library's site id, "owner", "owners", "owner_search"}; its message: the
 * owner sentence). When it is about site_id, writes its members but "site"
 * into w's current object (the site's entry in "sites") and returns 1, else
 * 0. */
int lw_torch_info_host_owner_emit(lw_jw *w, uint32_t site_id);
/* Its owner sentence, when it is about site_id, or NULL. Copies into out. */
const char *lw_torch_info_host_owner_text(uint32_t site_id, char *out, size_t n);

/* How the helper marks steps ("step_unit": {"unit": "module_call",
 * "module": "TinyLM"} or {"unit": "optimizer_step"}): copies the unit, and
 * the module's class name (empty when none), returns 1; 0 when the helper
 * told none. */
int lw_torch_info_step_unit(char *unit, size_t un, char *module, size_t mn);

/* What a step is, as names (leakwatch_torch_step_unit): unit "module_call"
 * (module: the class's name, an identifier, else left out) or
 * "optimizer_step"; the library writes the text "step_unit" holds. 0, or -1
 * for another unit. */
int lw_torch_info_step_unit_set(const char *unit, const char *module);

/* Pure: 1 when text is one JSON value of the given type ('[' array, '{'
 * object), nothing else around it but white space. */
int lw_json_valid(const char *text, char type);

/* A forked child forgets its parent's. */
void lw_torch_info_forget(void);

#endif
