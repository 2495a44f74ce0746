/*
 * whatif_mpi.h: the Open MPI calls of `mpirun -n N tpusim whatif`, in a
 * module of their own (libtpusim_mpi.so, whatif_mpi.c) that cmd_whatif.c
 * loads with dlopen under mpirun only: linking Open MPI made every run
 * load its eight libraries (1.7 ms of each start). The module's one
 * symbol, whatif_mpi_api, is this table.
 */
#ifndef WHATIF_MPI_H
#define WHATIF_MPI_H

struct whatif_mpi {
	/* MPI_Init and this process's rank and the ranks in all; 0 on
	 * success */
	int (*init)(int *rank, int *ranks);
	/* the largest v over the ranks (every rank gets it) */
	int (*max_int)(int v);
	/* the sums of v[0..n) over the ranks, into rank 0's v */
	void (*sum_to_root)(double *v, int n, int rank);
	void (*finalize)(void);
};

extern const struct whatif_mpi whatif_mpi_api;

#endif
