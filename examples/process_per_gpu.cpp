// SPDX-License-Identifier: MIT
// One process per GPU: the third model. Run it under a launcher (mpirun -np 4, srun, torchrun): each
// process finds its local rank in the launcher's environment, binds its own device, checks that it
// has touched no other device, and reports. Built with MPI (-Dmpi=enabled) it also gathers every
// rank's binding and rank 0 checks that no two ranks on a node share a device.
//
// usage: mpirun -np N cuctx-example-process-per-gpu

#include "cuctx/cuctx.hpp"

#ifdef CUCTX_EXAMPLE_MPI
#define OMPI_SKIP_MPICXX 1 // the C API only: the C++ bindings are deprecated and do not build clean
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#endif

#include <algorithm>
#include <cstdio>
#include <set>
#include <vector>

int main(int argc, char** argv)
{
#ifdef CUCTX_EXAMPLE_MPI
    MPI_Init(&argc, &argv);
#else
    (void)argc;
    (void)argv;
#endif
    int status = 0;
    int ordinal = -1; // what this rank bound, -1 when it could not
    try {
        const cuctx::RankBinding binding = cuctx::bindRank();
        const cuctx::Context ctx = cuctx::Context::primary(cuctx::Device::get(binding.ordinal));
        {
            cuctx::ContextGuard guard(ctx);
            cuctx::DeviceBuffer probe(ctx, 4096); // some work on the rank's own device
            probe.fill32(static_cast<unsigned>(binding.localRank));
        }
        const std::vector<int> stray = cuctx::strayPrimaryContexts(binding.ordinal);
        std::printf("rank %d: %s; stray contexts on other devices: %zu\n", binding.localRank,
                    binding.describe().c_str(), stray.size());
        ordinal = binding.ordinal;
        status = stray.empty() ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "%s\n", e.what());
        status = 2;
    }
#ifndef CUCTX_EXAMPLE_MPI
    (void)ordinal; // only the MPI build gathers it
#else
    // Every rank takes part, failed or not, so that none waits for ever.
    int size = 0, rank = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::vector<int> ordinals(static_cast<std::size_t>(size));
    MPI_Gather(&ordinal, 1, MPI_INT, ordinals.data(), 1, MPI_INT, 0, MPI_COMM_WORLD);
    if (rank == 0) {
        std::set<int> distinct;
        std::size_t bound = 0;
        for (int o : ordinals)
            if (o >= 0) {
                distinct.insert(o);
                ++bound;
            }
        const bool ok = bound == ordinals.size() && distinct.size() == bound;
        std::printf("%d ranks, %zu bound, on %zu distinct devices: %s\n", size, bound, distinct.size(),
                    ok ? "ok" : "FAILED");
        status = ok ? status : std::max(status, 1);
    }
#endif
#ifdef CUCTX_EXAMPLE_MPI
    MPI_Finalize();
#endif
    return status;
}
