/*
 * cuda_module.c - the CUDA backend's entry points in hs_validate: they load
 * hetsim-cuda.so on first use (hs_cuda_module.h, common/hs_module.h) and
 * call it, so hetsim and libhetsim.so never link CUDA, cuBLAS, NCCL or MPI.
 * Without the module every call fails with HS_EUNSUPPORTED naming the path
 * looked at and how to build it; the CPU backend stays available.
 */
#include "hs_cuda_module.h"

#ifndef HS_CUDA_MODULE_CONFIGURED
#define HS_CUDA_MODULE_CONFIGURED 0
#endif

static hs_status_t load(const hs_cuda_module_t **mod, hs_error_t *err)
{
  const hs_module_spec_t spec = {
      .file = HS_CUDA_MODULE_FILE,
      .symbol = HS_CUDA_MODULE_SYMBOL,
      .what = "--backend cuda",
      .build_hint = HS_CUDA_MODULE_CONFIGURED
                        ? "build it with `cmake --build <build dir> --target hetsim_cuda` (or set "
                          "HETSIM_MODULE_DIR to the directory holding it); --backend cpu runs "
                          "everywhere"
                        : "this hetsim was built without CUDA/NCCL: configure with "
                          "-DHS_WITH_CUDA=ON where nvcc, cuBLAS, NCCL and MPI are installed, then "
                          "`cmake --build <build dir> --target hetsim_cuda`; --backend cpu runs "
                          "everywhere",
      .abi = {HS_CUDA_MODULE_VERSION, sizeof(hs_cuda_module_t), HS_CUDA_MODULE_FINGERPRINT},
  };
  const void *t = NULL;
  hs_status_t st = hs_module_load(&spec, &t, err);
  *mod = t;
  return st;
}

bool hs_cuda_backend_built(void)
{
  const hs_cuda_module_t *mod = NULL;
  return load(&mod, NULL) == HS_OK;
}

hs_status_t hs_replay_cuda(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                           hs_measured_t *out, bool *is_root, hs_error_t *err)
{
  const hs_cuda_module_t *mod = NULL;
  hs_measured_init(out);
  if (is_root)
    *is_root = true;
  hs_status_t st = load(&mod, err);
  return st != HS_OK ? st : mod->replay(tg, m, o, out, is_root, err);
}

hs_status_t hs_microbench_cuda(const hs_microbench_opts_t *o, hs_measurements_t *out, bool *is_root,
                               hs_error_t *err)
{
  const hs_cuda_module_t *mod = NULL;
  if (is_root)
    *is_root = true;
  hs_status_t st = load(&mod, err);
  return st != HS_OK ? st : mod->microbench(o, out, is_root, err);
}
