/*
 * hs_cuda_module.h - internal to validate/: the table the CUDA backend module
 * (hetsim-cuda.so, built from validate/cuda/) exports and cuda_module.c loads
 * on demand, so that only `replay --backend cuda` and `calibrate --backend
 * cuda` map CUDA, cuBLAS, NCCL and MPI (common/hs_module.h).
 *
 * The module carries its own copy of hs_validate, hs_sim, hs_models,
 * hs_clusters and hs_common (static, hidden: it exports the table alone),
 * so the structs below cross the boundary by value and by pointer; their
 * sizes make the fingerprint, and a module built from other sources is
 * refused. Memory the module allocates in *out is malloc'd from the same C
 * library and freed by the caller's hs_measured_destroy /
 * hs_measurements_destroy as usual.
 */
#ifndef HS_CUDA_MODULE_H
#define HS_CUDA_MODULE_H

#include "hs_module.h"
#include "hs_validate.h"

#define HS_CUDA_MODULE_FILE "hetsim-cuda.so"
#define HS_CUDA_MODULE_SYMBOL "hs_cuda_module"
#define HS_CUDA_MODULE_VERSION 1u

#define HS__FP(h, x) (((h) ^ (uint64_t)(x)) * UINT64_C(1099511628211))
#define HS_CUDA_MODULE_FINGERPRINT                                                                  \
  HS__FP(HS__FP(HS__FP(HS__FP(HS__FP(HS__FP(HS__FP(HS__FP(UINT64_C(14695981039346656037),           \
                                                          sizeof(hs_error_t)),                      \
                                                   sizeof(hs_model_t)),                             \
                                            sizeof(hs_taskgraph_t)),                                \
                                     sizeof(hs_replay_opts_t)),                                     \
                              sizeof(hs_measured_t)),                                               \
                       sizeof(hs_microbench_opts_t)),                                               \
                sizeof(hs_measurements_t)),                                                         \
         sizeof(hs_gpu_t))

typedef struct hs_cuda_module {
  hs_module_abi_t abi;
  /* as hs_replay_cuda and hs_microbench_cuda (hs_validate.h) */
  hs_status_t (*replay)(const hs_taskgraph_t *tg, const hs_model_t *m, const hs_replay_opts_t *o,
                        hs_measured_t *out, bool *is_root, hs_error_t *err);
  hs_status_t (*microbench)(const hs_microbench_opts_t *o, hs_measurements_t *out, bool *is_root,
                            hs_error_t *err);
} hs_cuda_module_t;

/* The module's implementations (validate/cuda/). */
hs_status_t hs__cuda_replay(const hs_taskgraph_t *tg, const hs_model_t *m,
                            const hs_replay_opts_t *o, hs_measured_t *out, bool *is_root,
                            hs_error_t *err);
hs_status_t hs__cuda_microbench(const hs_microbench_opts_t *o, hs_measurements_t *out,
                                bool *is_root, hs_error_t *err);

#endif
