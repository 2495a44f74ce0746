/*
 * whatif_mpi.c: the module of whatif_mpi.h, linked to Open MPI.
 */
#include "whatif_mpi.h"

#include <mpi.h>

static int init(int *rank, int *ranks)
{
	if (MPI_Init(NULL, NULL) != MPI_SUCCESS)
		return -1;
	MPI_Comm_rank(MPI_COMM_WORLD, rank);
	MPI_Comm_size(MPI_COMM_WORLD, ranks);
	return 0;
}

static int max_int(int v)
{
	int worst = v;
	MPI_Allreduce(&v, &worst, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
	return worst;
}

static void sum_to_root(double *v, int n, int rank)
{
	if (rank == 0)
		MPI_Reduce(MPI_IN_PLACE, v, n, MPI_DOUBLE, MPI_SUM, 0,
			   MPI_COMM_WORLD);
	else
		MPI_Reduce(v, NULL, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
}

static void finalize(void)
{
	MPI_Finalize();
}

const struct whatif_mpi whatif_mpi_api = {init, max_int, sum_to_root,
					  finalize};
