/* SPDX-License-Identifier: Apache-2.0 */
/* Which process of a distributed job this is, from the launcher's
 * environment: torchrun (RANK, LOCAL_RANK, WORLD_SIZE), SLURM (SLURM_PROCID,
 * SLURM_LOCALID, SLURM_NTASKS), Open MPI (OMPI_COMM_WORLD_RANK, _LOCAL_RANK,
 * _SIZE), MPICH/Intel MPI (PMI_RANK, MPI_LOCALRANKID, PMI_SIZE). */
#ifndef LW_RANK_H
#define LW_RANK_H

typedef struct {
    long rank, local_rank, world_size; /* -1 when no launcher says */
} lw_rank_info;

void lw_rank_get(lw_rank_info *r);

#endif
