/* SPDX-License-Identifier: Apache-2.0 */
/* The launcher's rank (src/base/rank.c): torchrun's, SLURM's, Open MPI's and
 * PMI's variables, in that order. */
#include "rank.h"

#include "../check_run.h"

#include <check.h>
#include <stddef.h>
#include <stdlib.h>

START_TEST(rank_from_launchers) {
    const char *vars[] = {"RANK",
                          "LOCAL_RANK",
                          "WORLD_SIZE",
                          "SLURM_PROCID",
                          "SLURM_LOCALID",
                          "SLURM_NTASKS",
                          "OMPI_COMM_WORLD_RANK",
                          "OMPI_COMM_WORLD_LOCAL_RANK",
                          "OMPI_COMM_WORLD_SIZE",
                          "PMI_RANK",
                          "PMI_SIZE",
                          "PMIX_RANK",
                          "MPI_LOCALRANKID"};
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
        unsetenv(vars[i]);
    lw_rank_info r;
    lw_rank_get(&r);
    ck_assert(r.rank == -1 && r.local_rank == -1 && r.world_size == -1);
    setenv("SLURM_PROCID", "5", 1);
    setenv("SLURM_LOCALID", "1", 1);
    setenv("SLURM_NTASKS", "8", 1);
    lw_rank_get(&r);
    ck_assert(r.rank == 5 && r.local_rank == 1 && r.world_size == 8);
    setenv("RANK", "3", 1); /* torchrun's wins */
    setenv("OMPI_COMM_WORLD_SIZE", "junk", 1);
    lw_rank_get(&r);
    ck_assert_int_eq(r.rank, 3);
    unsetenv("RANK"), unsetenv("SLURM_PROCID");
    setenv("PMI_RANK", "2", 1);
    setenv("RANK", "-4", 1); /* not a rank: ignored */
    lw_rank_get(&r);
    ck_assert_int_eq(r.rank, 2);
}
END_TEST

/* The job's process group, once it said (mp.spawn sets no variable), wins
 * over the launcher's variables; a negative rank forgets it. */
START_TEST(rank_from_the_process_group) {
    unsetenv("RANK"), unsetenv("WORLD_SIZE"), unsetenv("SLURM_PROCID"), unsetenv("SLURM_NTASKS");
    unsetenv("PMI_RANK"), unsetenv("PMI_SIZE"), unsetenv("OMPI_COMM_WORLD_SIZE");
    lw_rank_info r;
    lw_rank_get(&r);
    ck_assert(r.rank == -1 && r.source == LW_RANK_NONE && lw_rank_source_name(&r) == NULL);
    lw_rank_set_group(1, 2);
    lw_rank_get(&r);
    ck_assert(r.rank == 1 && r.world_size == 2 && r.source == LW_RANK_GROUP);
    ck_assert_str_eq(lw_rank_source_name(&r), "process group");
    setenv("RANK", "3", 1);
    setenv("WORLD_SIZE", "4", 1);
    lw_rank_get(&r);
    ck_assert(r.rank == 1 && r.world_size == 2);
    lw_rank_set_group(-1, 0);
    lw_rank_get(&r);
    ck_assert(r.rank == 3 && r.world_size == 4 && r.source == LW_RANK_LAUNCHER);
    ck_assert_str_eq(lw_rank_source_name(&r), "launcher");
    unsetenv("RANK"), unsetenv("WORLD_SIZE");
}
END_TEST

int main(void) {
    Suite *s = suite_create("rank");
    TCase *tc = tcase_create("core");
    tcase_add_test(tc, rank_from_launchers);
    tcase_add_test(tc, rank_from_the_process_group);
    suite_add_tcase(s, tc);
    return lw_check_run(s) ? 1 : 0;
}
