/* The MPI layer from an installed neurosolve (neurosolve::neurosolve_mpi):
 * every process agrees on a status. Run alone (a singleton) or under mpirun. */
#include <stdio.h>

#include <neurosolve/mpi.h>
#include <neurosolve/neurosolve.h>

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const ns_status st = ns_mpi_agree(MPI_COMM_WORLD, NS_OK);
    if (rank == 0) printf("consumer_mpi: neurosolve %s, %d process(es), agree: %s\n", ns_version(), size,
                          ns_status_string(st));
    MPI_Finalize();
    return st == NS_OK ? 0 : 1;
}
