/*
 * hs_module.h - optional backends as shared modules loaded on demand.
 *
 * The core hetsim binary and libhetsim.so link neither CUDA, cuBLAS, NCCL
 * nor MPI: mapping them cost every command ~220 MB resident (issue #35).
 * The code that needs them is built as a module (hetsim-cuda.so for the CUDA
 * replay and microbenchmarks, hetsim-mpi.so for sweeps under mpirun), each
 * exporting one const table of function pointers; the command that needs it
 * dlopen(3)s it here. A module is never closed (its libraries keep state and
 * atexit handlers), so a table stays valid for the life of the process.
 *
 * Where a module is looked for, first found wins:
 *   1. $HETSIM_MODULE_DIR, when set (and then only there);
 *   2. the directory of the running executable (/proc/self/exe);
 *   3. the build directory the library was compiled for (HS_MODULE_DIR).
 *
 * Messages say how to build a missing module: "<build dir>" in a spec's
 * build_hint becomes the directory the library was built in.
 *
 * Every table begins with an hs_module_abi_t the loader compares with the
 * caller's: a module built from other sources (struct sizes differ) is
 * refused instead of called.
 */
#ifndef HS_MODULE_H
#define HS_MODULE_H

#include "hs_common.h"

/* First member of every module table. */
typedef struct hs_module_abi {
  uint32_t version;      /* the table's layout version */
  uint32_t size;         /* sizeof the whole table */
  uint64_t fingerprint;  /* sizes of the structs that cross the boundary */
} hs_module_abi_t;

/* How to find and check one module. */
typedef struct hs_module_spec {
  const char *file;       /* "hetsim-cuda.so" */
  const char *symbol;     /* the exported table, "hs_cuda_module" */
  const char *what;       /* for messages: "the cuda backend" */
  const char *build_hint; /* for messages: how to build it */
  hs_module_abi_t abi;    /* what the caller was compiled with */
} hs_module_spec_t;

/* Loads the module (or finds it already loaded) and returns its table in
 * *table (owned by the module, valid until the process exits). Errors, all
 * HS_EUNSUPPORTED (exit 2), name the path tried and the build hint: module
 * file missing, dlopen failed (with dlerror's reason, e.g. a missing
 * libcudart), symbol missing, ABI mismatch. O(1) system calls. */
hs_status_t hs_module_load(const hs_module_spec_t *spec, const void **table, hs_error_t *err);

/* Writes the path the module would be loaded from into buf (the first
 * candidate that exists, else the first candidate); for messages and tests. */
void hs_module_path(const char *file, char *buf, size_t n);

#endif
