/* ns_mpi_bind_device: the node-local rank and the device ordinal it gives
 * (local rank mod usable devices with bind = 1; NS_DEVICE_CURRENT with
 * bind = 0, without a usable GPU or without CUDA), every local rank once,
 * and the environment left as it was (the library neither reads nor sets
 * CUDA_VISIBLE_DEVICES). The processes of these runs share one node. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "neurosolve/neurosolve.h"
#ifdef NS_HAVE_MPI
#include "neurosolve/mpi.h"
#include "test_mpi_common.h"

int main(int argc, char **argv) {
    mpi_test_init(&argc, &argv);
    const char *env = getenv("CUDA_VISIBLE_DEVICES");
    char before[256];
    snprintf(before, sizeof before, "%s", env ? env : "(unset)");

    int device = 1234, lr = -1, ls = -1;
    CHECK_OK(ns_mpi_bind_device(MPI_COMM_WORLD, 0, &device, &lr, &ls));
    CHECK_MSG(device == NS_DEVICE_CURRENT, "bind = 0 gave device %d", device);
    CHECK_MSG(ls == mpi_size && lr >= 0 && lr < ls, "local rank %d of %d (%d processes)", lr, ls, mpi_size);
    /* every local rank once */
    int *all = malloc((size_t)mpi_size * sizeof *all);
    MPI_Allgather(&lr, 1, MPI_INT, all, 1, MPI_INT, MPI_COMM_WORLD);
    int seen = 0;
    for (int r = 0; r < mpi_size; ++r)
        if (all[r] >= 0 && all[r] < mpi_size) seen |= 1 << all[r];
    CHECK_MSG(seen == (1 << mpi_size) - 1, "local ranks do not cover 0..%d", mpi_size - 1);
    free(all);

    int usable = 0;
    if (ns_cuda_device_count(&usable) != NS_OK) usable = 0;
    int lr2 = -1;
    device = 1234;
    CHECK_OK(ns_mpi_bind_device(MPI_COMM_WORLD, 1, &device, &lr2, NULL));
    CHECK(lr2 == lr);
    if (usable > 0)
        CHECK_MSG(device == lr % usable, "bind = 1: device %d, local rank %d, %d usable", device, lr, usable);
    else
        CHECK_MSG(device == NS_DEVICE_CURRENT, "bind = 1 without a GPU gave device %d", device);
    CHECK_OK(ns_mpi_bind_device(MPI_COMM_WORLD, 1, NULL, NULL, NULL)); /* every output may be NULL */

    env = getenv("CUDA_VISIBLE_DEVICES");
    CHECK_MSG(strcmp(before, env ? env : "(unset)") == 0, "CUDA_VISIBLE_DEVICES changed: '%s' -> '%s'", before,
              env ? env : "(unset)");
    return mpi_test_finish("test_mpi_bind");
}
#else
int main(void) { CHECK_SKIP("neurosolve was built without MPI (NS_MPI)"); }
#endif
