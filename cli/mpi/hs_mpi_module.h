/*
 * hs_mpi_module.h - internal to cli/: what `hetsim sweep` needs of MPI,
 * as the table the module hetsim-mpi.so (cli/mpi/sweep_mpi.c) exports.
 * cmd_sweep.c loads it only when mpirun started the process, so a plain
 * hetsim never maps libmpi (common/hs_module.h).
 *
 * Messages are rows of one job, sent by ranks > 0 to rank 0 with one tag;
 * counts and job lists go out from rank 0 by broadcast. The module keeps
 * no state of its own beyond MPI's (process-global by nature).
 */
#ifndef HS_MPI_MODULE_H
#define HS_MPI_MODULE_H

#include "hs_module.h"

#define HS_MPI_MODULE_FILE "hetsim-mpi.so"
#define HS_MPI_MODULE_SYMBOL "hs_mpi_module"
#define HS_MPI_MODULE_VERSION 1u
/* nothing but scalars and byte buffers cross: the table's size is enough */
#define HS_MPI_MODULE_FINGERPRINT UINT64_C(0)

typedef struct hs_mpi_module {
  hs_module_abi_t abi;
  /* MPI_Init, then this process's rank and the world's size */
  void (*init)(int *argc, char ***argv, int *rank, int *size);
  void (*finalize)(void);
  /* MPI_Abort(MPI_COMM_WORLD, code): does not return */
  void (*abort)(int code);
  /* sends `len` bytes to rank 0 */
  void (*send_rows)(const char *rows, size_t len);
  /* waits for one message from any rank; returns it NUL-terminated
   * (caller frees), NULL when out of memory */
  char *(*recv_rows)(void);
  /* true when a message is waiting */
  bool (*rows_waiting)(void);
  /* broadcasts from rank 0 */
  void (*bcast_count)(long long *n);
  void (*bcast_jobs)(uint64_t *jobs, size_t n);
} hs_mpi_module_t;

#endif
