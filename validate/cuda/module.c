/*
 * module.c - the one symbol hetsim-cuda.so exports: the table
 * validate/cuda_module.c checks and calls (hs_cuda_module.h).
 */
#include "../hs_cuda_module.h"

const hs_cuda_module_t hs_cuda_module = {
    .abi = {HS_CUDA_MODULE_VERSION, sizeof(hs_cuda_module_t), HS_CUDA_MODULE_FINGERPRINT},
    .replay = hs__cuda_replay,
    .microbench = hs__cuda_microbench,
};
