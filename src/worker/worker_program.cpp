// SPDX-License-Identifier: MIT
// cuctx-gpu-worker: the worker process of cuctx::GpuWorker (include/cuctx/gpu_worker.hpp). Installed
// in libexecdir/cuctx; GpuWorker finds it there, next to libcuctx.so, or at $CUCTX_GPU_WORKER.

#include <cuctx/gpu_worker.hpp>

int main(int argc, char** argv)
{
    return cuctx::gpuWorkerMain(argc, argv);
}
