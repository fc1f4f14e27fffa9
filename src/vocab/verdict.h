/* SPDX-License-Identifier: Apache-2.0 */
/* The detector's verdicts and their names in the report ("verdict",
 * "growth.verdict"): the only place they are spelled. The library writes
 * them; the command reads them back with lw_verdict_parse. */
#ifndef LW_VERDICT_H
#define LW_VERDICT_H

typedef enum {
    /* A reader's "no verdict it knows" (an older or damaged report); the
     * library never writes it. */
    LW_VERDICT_UNKNOWN = -1,
    LW_VERDICT_INCONCLUSIVE = 0,
    LW_VERDICT_LEAK = 1,
    LW_VERDICT_NO_LEAK = 2,
    /* An attached session that saw no allocation since the attach: nothing
     * to judge (the job allocated nothing since, or through function
     * pointers it looked up before the attach, which an attach cannot see).
     * Never "no leak". */
    LW_VERDICT_NOTHING_SEEN = 3
} lw_verdict;
#define LW_VERDICT_COUNT 4

/* "inconclusive", "leak", "no_leak", "nothing_seen"; "unknown" for any
 * other value. */
const char *lw_verdict_name(int v);
/* The verdict named s, or -1 when s is NULL or names none. */
int lw_verdict_parse(const char *s);

#endif
