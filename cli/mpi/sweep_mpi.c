/*
 * sweep_mpi.c - hetsim-mpi.so: MPI for `mpirun -np N hetsim sweep`, the table
 * of hs_mpi_module.h and the only symbol the module exports (module.map).
 */
#include "hs_mpi_module.h"

#include <mpi.h>
#include <stdlib.h>

#define ROWS_TAG 17

static void mpi_init(int *argc, char ***argv, int *rank, int *size)
{
  MPI_Init(argc, argv);
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

static void mpi_finalize(void) { MPI_Finalize(); }

static void mpi_abort(int code)
{
  MPI_Abort(MPI_COMM_WORLD, code);
  exit(code); /* MPI_Abort should not return */
}

static void send_rows(const char *rows, size_t len)
{
  MPI_Send(rows, (int)len, MPI_CHAR, 0, ROWS_TAG, MPI_COMM_WORLD);
}

static char *recv_rows(void)
{
  MPI_Status stt;
  int len = 0;
  MPI_Probe(MPI_ANY_SOURCE, ROWS_TAG, MPI_COMM_WORLD, &stt);
  MPI_Get_count(&stt, MPI_CHAR, &len);
  char *buf = malloc((size_t)len + 1);
  if (!buf)
    return NULL;
  MPI_Recv(buf, len, MPI_CHAR, stt.MPI_SOURCE, ROWS_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  buf[len] = '\0';
  return buf;
}

static bool rows_waiting(void)
{
  int flag = 0;
  MPI_Iprobe(MPI_ANY_SOURCE, ROWS_TAG, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
  return flag != 0;
}

static void bcast_count(long long *n) { MPI_Bcast(n, 1, MPI_LONG_LONG, 0, MPI_COMM_WORLD); }

static void bcast_jobs(uint64_t *jobs, size_t n)
{
  MPI_Bcast(jobs, (int)n, MPI_UINT64_T, 0, MPI_COMM_WORLD);
}

const hs_mpi_module_t hs_mpi_module = {
    .abi = {HS_MPI_MODULE_VERSION, sizeof(hs_mpi_module_t), HS_MPI_MODULE_FINGERPRINT},
    .init = mpi_init,
    .finalize = mpi_finalize,
    .abort = mpi_abort,
    .send_rows = send_rows,
    .recv_rows = recv_rows,
    .rows_waiting = rows_waiting,
    .bcast_count = bcast_count,
    .bcast_jobs = bcast_jobs,
};
