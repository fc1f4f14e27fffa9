/* SPDX-License-Identifier: Apache-2.0 */
/* Which process of a distributed job this is, from the launcher's
 * environment: torchrun (RANK, LOCAL_RANK, WORLD_SIZE), SLURM (SLURM_PROCID,
 * SLURM_LOCALID, SLURM_NTASKS), Open MPI (OMPI_COMM_WORLD_RANK, _LOCAL_RANK,
 * _SIZE), MPICH/Intel MPI (PMI_RANK, MPI_LOCALRANKID, PMI_SIZE). */
#ifndef LW_RANK_H
#define LW_RANK_H

typedef struct {
    long rank, local_rank, world_size; /* -1 when no launcher says */
    /* Where rank and world_size come from: LW_RANK_GROUP once the job's
     * process group told (lw_rank_set_group), else LW_RANK_LAUNCHER when a
     * launcher's variable says, else LW_RANK_NONE. */
    int source;
} lw_rank_info;

enum { LW_RANK_NONE = 0, LW_RANK_LAUNCHER = 1, LW_RANK_GROUP = 2 };

void lw_rank_get(lw_rank_info *r);

/* The same, with the launcher's variables read once per process (for each
 * message on stderr). */
void lw_rank_get_cached(lw_rank_info *r);

/* The rank and world size of the job's default process group
 * (torch.distributed: get_rank(), get_world_size()), once the job created
 * it: they win over the launcher's variables from then on, whatever the
 * launcher (mp.spawn sets none). A negative rank forgets them. */
void lw_rank_set_group(long rank, long world_size);

/* "process group", "launcher", or NULL for r->source. */
const char *lw_rank_source_name(const lw_rank_info *r);

#endif
