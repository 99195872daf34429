/*
 * stream_kernel.cu - the CUDA backend's memory-bound kernel: a scaled copy
 * that reads n floats and writes n floats (8n bytes, the op's traffic), with
 * a grid-stride loop so one launch covers any size. C linkage for
 * replay_cuda.c, which is plain C.
 */
#include <cuda_runtime.h>
#include <stddef.h>

__global__ void hs_stream_kernel(float *__restrict__ dst, const float *__restrict__ src, size_t n)
{
  size_t stride = (size_t)blockDim.x * gridDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
    dst[i] = src[i] * 0.5f + 1.0f;
}

extern "C" cudaError_t hs__cuda_stream(float *dst, const float *src, size_t n, cudaStream_t s)
{
  if (n == 0)
    return cudaSuccess;
  int dev = 0, sms = 0;
  cudaGetDevice(&dev);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
  size_t blocks = (n + 255) / 256;
  size_t cap = (size_t)(sms > 0 ? sms : 80) * 8;
  if (blocks > cap)
    blocks = cap;
  hs_stream_kernel<<<(unsigned)blocks, 256, 0, s>>>(dst, src, n);
  return cudaGetLastError();
}

/* Fills v with non-zero values on the device (GEMM operands). */
__global__ void hs_fill_kernel(unsigned short *v, size_t n_halves)
{
  size_t stride = (size_t)blockDim.x * gridDim.x;
  for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n_halves; i += stride)
    v[i] = (unsigned short)(0x3c00u + (unsigned)(i % 97)); /* small positive fp16/bf16 bit patterns */
}

extern "C" cudaError_t hs__cuda_fill(void *v, size_t bytes, cudaStream_t s)
{
  size_t n = bytes / 2;
  if (n == 0)
    return cudaSuccess;
  size_t blocks = (n + 255) / 256;
  if (blocks > 4096)
    blocks = 4096;
  hs_fill_kernel<<<(unsigned)blocks, 256, 0, s>>>((unsigned short *)v, n);
  return cudaGetLastError();
}
