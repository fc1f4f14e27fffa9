/* SPDX-License-Identifier: Apache-2.0 */
/* What the PyTorch helper (python/leakwatch/_torch.py) learned in the job and
 * handed over for the report: the sites found in PyTorch's own allocation
 * history during a diagnosis window, the window itself, the allocator
 * backend in effect, how steps were counted, what keeps a pinned host
 * leak's site alive. The helper hands values by their rows' paths
 * (torch_values.h: numbers, names, lines); the library keeps them as a
 * tree, composes what it says itself (each place's label, each owner's
 * sentence, the summary's label) and writes the JSON by the report's rows. */
#ifndef LW_TORCH_INFO_H
#define LW_TORCH_INFO_H

#include "json_write.h"
#include "torch_values.h"

#include <stddef.h>
#include <stdint.h>

/* Values in one batch at most. */
#define LW_TORCH_INFO_MAX_VALUES (1u << 20)

/* One section's values, replacing the section's earlier ones: "sites"
 * (paths under "sites[]": PyTorch's sites, in order), "diagnosis" (under
 * "torch.diagnosis"), "backend" ("torch.backend"), "steps" ("torch.steps"),
 * or "host_owner" (what keeps the library's site `site` alive: paths under
 * "sites[].owner", "sites[].owners" and "sites[].owner_search", the first
 * index 0; written into that site's entry). A value is skipped when its
 * path is outside the section, is one the library composes itself
 * (where.label, owner.text, owners[].text) or lw_tv_add refuses it.
 * message, if not NULL, is said once on stderr (not for sites and
 * host_owner). Returns how many values were skipped (0: all taken), or -1
 * and nothing stored: an unknown section, no site for host_owner, over
 * LW_TORCH_INFO_MAX_VALUES values, every value skipped, out of memory. */
int lw_torch_info_values(const char *section, uint32_t site, const lw_tv_value *v, size_t n,
                         const char *message);

/* The same batch packed (leakwatch_torch_values_packed): npaths distinct
 * paths in paths (paths_size bytes), each ended by a NUL; 6 ints per value
 * in cells (its path's number, its 3 positions, its type, its text's length
 * in texts or -1); a number per value; the texts end to end (ntexts
 * bytes). A value whose path number or text lies outside them is skipped. */
int lw_torch_info_values_packed(const char *section, uint32_t site, const char *paths,
                                size_t paths_size, size_t npaths, const int *cells,
                                const double *numbers, const char *texts, size_t ntexts, size_t n,
                                const char *message);

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
 * with an id). */
int lw_torch_info_answer_members(lw_jw *w);
/* The top site's label (its place, and its note), or NULL. Copies into out. */
const char *lw_torch_info_label(char *out, size_t n);
/* What keeps the top site's blocks alive (its owner's sentence), then the
 * other leaking sites on lines of their own, or NULL. Copies into out. */
const char *lw_torch_info_owner(char *out, size_t n);

/* What keeps a pinned host leak's site alive (section "host_owner"): when
 * it is about site_id, writes its owner, owners and owner_search into w's
 * current object (the site's entry in "sites") and returns 1, else 0. */
int lw_torch_info_host_owner_emit(lw_jw *w, uint32_t site_id);
/* Its owner sentence, when it is about site_id, or NULL. Copies into out. */
const char *lw_torch_info_host_owner_text(uint32_t site_id, char *out, size_t n);

/* How the helper marks steps (lw_torch_info_step_unit_set): copies the
 * unit, and the module's class name (empty when none), returns 1; 0 when
 * the helper told none. */
int lw_torch_info_step_unit(char *unit, size_t un, char *module, size_t mn);

/* What a step is, as names (leakwatch_torch_step_unit): unit "module_call"
 * (module: the class's name, an identifier, else left out) or
 * "optimizer_step". 0, or -1 for another unit. */
int lw_torch_info_step_unit_set(const char *unit, const char *module);
/* The same from leakwatch_torch_info("step_unit", JSON): {"unit":
 * "module_call", "module": "TinyLM"} as json.dumps writes it compactly. */
int lw_torch_info_step_unit_json(const char *json);

/* A forked child forgets its parent's. */
void lw_torch_info_forget(void);

#endif
