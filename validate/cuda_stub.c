/*
 * cuda_stub.c - the CUDA backend's entry points in a build without it
 * (HS_WITH_CUDA=OFF, or AUTO without nvcc/cuBLAS/NCCL/MPI): every call says
 * so, and the CPU backend stays available.
 */
#include "hs_validate.h"

#ifndef HS_HAVE_CUDA

bool hs_cuda_backend_built(void) { return false; }

static hs_status_t not_built(hs_error_t *err)
{
  return hs_error_set(err, HS_EUNSUPPORTED,
                      "the cuda backend is not in this build: built without CUDA/NCCL (configure "
                      "with -DHS_WITH_CUDA=ON where nvcc, cuBLAS, NCCL and MPI are installed); "
                      "--backend cpu runs everywhere");
}

hs_status_t hs_replay_cuda(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                           hs_measured_t *out, bool *is_root, hs_error_t *err)
{
  hs_measured_init(out);
  if (is_root)
    *is_root = true;
  return not_built(err);
}

hs_status_t hs_microbench_cuda(const hs_microbench_opts_t *o, hs_measurements_t *out, bool *is_root,
                               hs_error_t *err)
{
  if (is_root)
    *is_root = true;
  return not_built(err);
}

#endif
