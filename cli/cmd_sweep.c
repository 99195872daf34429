/*
 * cmd_sweep.c - `hetsim sweep SPEC.json`: runs a what-if grid (docs/sweep.md)
 * on -j worker processes, and across MPI ranks when started by mpirun.
 *
 * Output: rows are appended and flushed as jobs finish (completion order),
 * and the file is sorted by point at the end, so the final bytes do not
 * depend on -j or the number of ranks. Without -o, rows go to stdout in
 * point order through a reorder buffer. --resume keeps the complete jobs of
 * an existing output and runs the rest.
 *
 * MPI: only when the environment says mpirun started us (OMPI_COMM_WORLD_SIZE,
 * PMI_SIZE, PMIX_RANK), so a plain `hetsim sweep` never touches MPI; then
 * MPI comes from the module hetsim-mpi.so (mpi/hs_mpi_module.h), loaded
 * here, and a missing module is an error (exit 2) rather than every rank
 * running the whole sweep. Rank 0
 * reads the output, broadcasts the jobs to do, runs its share (job i of the
 * list when i % size == 0) and writes every row; the other ranks run theirs
 * and send each job's rows to rank 0 as one message.
 */
#include "cli.h"
#include "hs_export.h"
#include "hs_output.h"
#include "hs_progress.h"
#include "mpi/hs_mpi_module.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifndef HS_MPI_MODULE_CONFIGURED
#define HS_MPI_MODULE_CONFIGURED 0
#endif

typedef struct out {
  const hs_sweep_spec_t *spec;
  FILE *f;                 /* -o file (append), or NULL for stdout */
  /* stdout reorder buffer, indexed by position in todo */
  const uint64_t *todo;
  size_t n_todo, next;
  char **pending;
  bool write_error;
  int write_errno;        /* its errno, 0 when the stream lost it */
  hs_progress_t prog;     /* rank 0; silent elsewhere and with --quiet */
} out_t;

static size_t todo_pos(const out_t *o, uint64_t job)
{
  size_t lo = 0, hi = o->n_todo;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (o->todo[mid] < job)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* Writes one job's rows (rank 0). */
static void emit(out_t *o, uint64_t job, const char *rows)
{
  errno = 0;
  if (o->f) {
    if (fputs(rows, o->f) < 0 || fflush(o->f) != 0)
      o->write_error = true;
  } else {
    size_t pos = todo_pos(o, job);
    if (pos < o->n_todo && !o->pending[pos])
      o->pending[pos] = strdup(rows);
    while (o->next < o->n_todo && o->pending[o->next]) {
      fputs(o->pending[o->next], stdout);
      free(o->pending[o->next]);
      o->pending[o->next++] = NULL;
    }
    if (fflush(stdout) != 0 || ferror(stdout))
      o->write_error = true;
  }
  if (o->write_error && !o->write_errno)
    o->write_errno = errno;
  hs_progress_add(&o->prog, o->spec->n_prices);
}

/* MPI is process-global state by nature (one MPI_Init per process), so the
 * module's table and the rank facts live in file statics rather than being
 * threaded through the row callback. mpi is NULL unless mpirun started us. */
static const hs_mpi_module_t *mpi;
static int mpi_rank;
static size_t remote_pending;

/* Receives one message of rows from any rank and emits it. */
static void recv_rows(out_t *o)
{
  char *buf = mpi->recv_rows();
  if (!buf) {
    fprintf(stderr, "hetsim sweep: out of memory receiving rows\n");
    mpi->abort(1);
    return;
  }
  uint64_t point = strtoull(buf, NULL, 10);
  emit(o, point / o->spec->n_prices, buf);
  free(buf);
}

static void drain(out_t *o)
{
  while (remote_pending > 0 && mpi->rows_waiting()) {
    recv_rows(o);
    remote_pending--;
  }
}

/* Loads hetsim-mpi.so; an exit code when it cannot. */
static int mpi_load(void)
{
  const hs_module_spec_t spec = {
      .file = HS_MPI_MODULE_FILE,
      .symbol = HS_MPI_MODULE_SYMBOL,
      .what = "hetsim sweep under mpirun",
      .build_hint = HS_MPI_MODULE_CONFIGURED
                        ? "build it with `cmake --build <build dir> --target hetsim_mpi` (or set "
                          "HETSIM_MODULE_DIR to the directory holding it); without mpirun, -j N "
                          "runs the sweep on this machine"
                        : "this hetsim was configured without MPI: install libopenmpi-dev, "
                          "re-run cmake, then `cmake --build <build dir> --target hetsim_mpi`; "
                          "without mpirun, -j N runs the sweep on this machine",
      .abi = {HS_MPI_MODULE_VERSION, sizeof(hs_mpi_module_t), HS_MPI_MODULE_FINGERPRINT},
  };
  hs_error_t err;
  hs_error_init(&err);
  const void *t = NULL;
  hs_status_t st = hs_module_load(&spec, &t, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  mpi = t;
  return 0;
}

static int on_rows(void *ctx, uint64_t job, const char *rows)
{
  out_t *o = ctx;
  if (mpi && mpi_rank != 0) {
    mpi->send_rows(rows, strlen(rows));
    return 0;
  }
  emit(o, job, rows);
  if (mpi)
    drain(o);
  return o->write_error ? 1 : 0;
}

static bool launched_by_mpirun(void)
{
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

/* Rank 0: prepares the output and the list of jobs to run. Returns an exit code. */
static int prepare(const hs_sweep_spec_t *spec, const char *path, bool resume, uint64_t **todo,
                   size_t *n_todo, size_t *n_done_jobs)
{
  hs_error_t err;
  hs_error_init(&err);
  uint64_t *done = NULL;
  size_t n_done = 0;
  char *text = NULL, *kept = NULL;
  size_t len = 0;
  hs_status_t st = HS_OK;
  *n_done_jobs = 0;
  /* the -o target is checked before anything reads it (a FIFO would block) */
  if (path && (st = hs_output_check(path, &err)) != HS_OK)
    goto out;
  if (path && resume && access(path, F_OK) == 0) {
    if ((st = hs_file_read(path, (size_t)1 << 32, &text, &len, &err)) != HS_OK)
      goto out;
    if ((st = hs_sweep_resume_scan(spec, text, hs_basename(path), &kept, &done, &n_done, &err)) != HS_OK)
      goto out;
    if ((st = hs_output_write_text(path, kept, &err)) != HS_OK)
      goto out;
  } else if (path) {
    if ((st = hs_output_write_text(path, hs_sweep_csv_header(), &err)) != HS_OK)
      goto out;
  }
  st = hs_sweep_todo(spec, done, n_done, todo, n_todo, &err);
  *n_done_jobs = n_done;
out:
  free(text);
  free(kept);
  free(done);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

static int finish_file(const char *path)
{
  hs_error_t err;
  hs_error_init(&err);
  char *text = NULL, *sorted = NULL;
  size_t len = 0;
  hs_status_t st = hs_file_read(path, (size_t)1 << 32, &text, &len, &err);
  if (st == HS_OK)
    st = hs_sweep_sort_output(text, hs_basename(path), &sorted, &err);
  if (st == HS_OK)
    st = hs_output_write_text(path, sorted, &err);
  free(text);
  free(sorted);
  return st == HS_OK ? 0 : hs_cli_fail(&err, st);
}

/* `hetsim sweep`'s options after parsing. */
typedef struct sweep_args {
  const char *spec_path;
  int64_t workers;            /* -j */
  const char *path;           /* -o, NULL: stdout */
  bool resume, dry_run, quiet;
  unsigned flags;             /* HS_SWEEP_NO_TIMINGS */
} sweep_args_t;

/* Reads the parsed options into *a. 0, or 2 with the message printed. */
static int read_sweep_args(const hs_opt_t *opts, const char *const *pos, int npos, sweep_args_t *a)
{
  memset(a, 0, sizeof *a);
  if (npos != 1) {
    fprintf(stderr, "hetsim sweep: give one SPEC.json (see --help)\n");
    return 2;
  }
  a->spec_path = pos[0];
  int rc = hs_cli_int(opts, "j", 1, 1, 1024, &a->workers);
  if (rc)
    return rc;
  const hs_opt_t *oo = hs_cli_opt(opts, "o");
  a->path = oo ? oo->value : NULL;
  a->resume = hs_cli_opt(opts, "resume") != NULL;
  if (a->resume && !a->path) {
    fprintf(stderr, "hetsim sweep: --resume needs -o FILE\n");
    return 2;
  }
  a->flags = hs_cli_opt(opts, "no-timings") ? HS_SWEEP_NO_TIMINGS : 0u;
  a->dry_run = hs_cli_opt(opts, "dry-run") != NULL;
  a->quiet = hs_cli_opt(opts, "quiet") != NULL;
  return 0;
}

/* Loads and resolves the spec (one global batch for every point unless
 * the spec asks otherwise), then lets --precision and --memory-headroom
 * override its planner options. 0 or the exit code. */
static int load_spec(const hs_opt_t *opts, const char *path, hs_sweep_spec_t *spec)
{
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_sweep_spec_load(path, spec, &err);
  if (st == HS_OK)
    st = hs_sweep_spec_resolve(spec, &err);
  if (st != HS_OK)
    return hs_cli_fail(&err, st);
  int rc;
  if ((rc = hs_cli_precision(opts, &spec->precision)) ||
      (rc = hs_cli_memory_headroom(opts, &spec->memory_headroom)))
    return rc;
  return 0;
}

/* Under mpirun: the module loaded and MPI initialised (*rank, *size);
 * otherwise rank 0 of 1. 0 or the exit code. */
static int mpi_start(int *argc, char ***argv, int *rank, int *size)
{
  *rank = 0;
  *size = 1;
  if (!launched_by_mpirun())
    return 0;
  int rc = mpi_load();
  if (rc)
    return rc;
  /* -j workers are forked processes that never call MPI: rows reach this
   * rank's main thread, which alone talks to MPI */
  mpi->init(argc, argv, rank, size);
  mpi_rank = *rank;
  return 0;
}

/* Every rank gets the list of jobs to run: rank 0 prepares it (rc is
 * prepare's exit code there) and, under MPI, broadcasts its count and
 * entries. Returns 0, or the exit code this rank ends with; under MPI a
 * failure of rank 0 ends every rank, after MPI is finalised. */
static int share_todo(const sweep_args_t *a, const hs_sweep_spec_t *spec, int rank, uint64_t **todo,
                      size_t *n_todo, size_t *n_done)
{
  int rc = 0;
  if (rank == 0)
    rc = prepare(spec, a->path, a->resume, todo, n_todo, n_done);
  if (!mpi)
    return rc;
  long long cnt = rc ? -1 : (long long)*n_todo;
  mpi->bcast_count(&cnt);
  if (cnt < 0) {
    mpi->finalize();
    mpi = NULL; /* finalised: the caller's cleanup must not again */
    return rank == 0 ? rc : 2;
  }
  *n_todo = (size_t)cnt;
  if (rank != 0) {
    *todo = hs_calloc(*n_todo + 1, sizeof **todo);
    if (!*todo)
      mpi->abort(1);
  }
  if (*n_todo)
    mpi->bcast_jobs(*todo, *n_todo);
  return rc;
}

/* After the rows: the write errors, then closing and sorting the -o file
 * by point. 0 or the exit code (under MPI, a write error aborts all). */
static int finish_output(out_t *o, const char *path)
{
  int rc;
  if (o->write_error) {
    fprintf(stderr, "hetsim: %s: write error%s%s\n", path ? path : "standard output",
            o->write_errno ? ": " : "", o->write_errno ? strerror(o->write_errno) : "");
    rc = hs_status_exit_code(HS_EIO);
    if (mpi)
      mpi->abort(rc);
    return rc;
  }
  if (!o->f)
    return 0;
  errno = 0;
  int bad = fclose(o->f);
  o->f = NULL;
  if (bad) {
    fprintf(stderr, "hetsim: %s: write error%s%s\n", path, errno ? ": " : "", errno ? strerror(errno) : "");
    return hs_status_exit_code(HS_EIO);
  }
  return finish_file(path);
}

/* Opens the output on rank 0 (the -o file for appending, or the CSV
 * header on stdout) and starts the progress line. 0 or the exit code. */
static int open_output(const sweep_args_t *a, const hs_sweep_spec_t *spec, int rank, int size, size_t n_done,
                       out_t *o)
{
  if (rank == 0 && a->path) {
    hs_error_t aerr;
    hs_error_init(&aerr);
    hs_status_t ast = hs_output_open_append(a->path, &o->f, &aerr);
    if (ast != HS_OK) {
      int rc = hs_cli_fail(&aerr, ast);
      if (mpi)
        mpi->abort(2);
      return rc;
    }
  }
  if (rank == 0 && !a->path)
    fputs(hs_sweep_csv_header(), stdout);
  bool quiet = rank != 0 || a->quiet;
  hs_progress_init(&o->prog, quiet ? NULL : stderr, "sweep", "points",
                   (uint64_t)o->n_todo * spec->n_prices);
  if (!quiet)
    fprintf(stderr, "sweep %s: %zu jobs x %zu price models = %llu points, %lld workers x %d ranks\n",
            spec->name, spec->n_jobs, spec->n_prices, (unsigned long long)spec->n_jobs * spec->n_prices,
            (long long)a->workers, size);
  if (n_done && !quiet)
    fprintf(stderr, "sweep: %zu jobs already in %s, %zu to run\n", n_done, a->path, o->n_todo);
  return 0;
}

/* Runs this rank's share of todo (positions i with i % size == rank) and,
 * on rank 0, writes every rank's rows. 0 or the exit code. */
static int run_share(const sweep_args_t *a, const hs_sweep_spec_t *spec, int rank, int size,
                     const uint64_t *todo, size_t n_todo, size_t n_done)
{
  int rc = 0;
  uint64_t *mine = hs_calloc(n_todo + 1, sizeof *mine);
  size_t n_mine = 0;
  out_t o;
  memset(&o, 0, sizeof o);
  o.spec = spec;
  o.todo = todo;
  o.n_todo = n_todo;
  o.pending = hs_calloc(n_todo + 1, sizeof *o.pending);
  if (!mine || !o.pending) {
    fprintf(stderr, "hetsim sweep: out of memory\n");
    rc = 1;
    goto out;
  }
  for (size_t i = 0; i < n_todo; i++)
    if ((int)(i % (size_t)size) == rank)
      mine[n_mine++] = todo[i];
  if ((rc = open_output(a, spec, rank, size, n_done, &o)))
    goto out;
  remote_pending = rank == 0 ? n_todo - n_mine : 0;
  hs_error_t err;
  hs_error_init(&err);
  hs_status_t st = hs_sweep_run(spec, mine, n_mine, (int)a->workers, a->flags, on_rows, &o, &err);
  if (mpi && rank == 0)
    while (remote_pending > 0) {
      recv_rows(&o);
      remote_pending--;
    }
  if (st != HS_OK) {
    rc = hs_cli_fail(&err, st);
    if (mpi) /* the other ranks wait for rows this rank will not send or take */
      mpi->abort(rc);
    goto out;
  }
  hs_progress_finish(&o.prog, false);
  rc = finish_output(&o, a->path);
out:
  if (o.f)
    fclose(o.f);
  for (size_t i = 0; o.pending && i < n_todo; i++)
    free(o.pending[i]);
  free(o.pending);
  free(mine);
  return rc;
}

int hs_cmd_sweep(int argc, char **argv)
{
  hs_opt_t opts[] = {
      {"o", true, "write rows to this CSV (default: stdout, in point order)"},
      {"j", true, "worker processes on this machine (default 1)"},
      {"resume", false, "keep the complete rows of an existing -o file, run only the rest"},
      {"no-timings", false, "leave search_s empty, so rows depend on the spec only"},
      {"dry-run", false, "print the number of jobs and points and exit"},
      {"quiet", false, "no progress output"},
      {"precision", true, "bf16|fp16|fp8|fp32: overrides the spec's \"precision\""},
      HS_CLI_HEADROOM_OPT,
      {NULL},
  };
  const char *pos[1];
  int npos = 0;
  int rc = hs_cli_parse(argc, argv, opts, pos, 1, &npos,
                        "usage: hetsim sweep SPEC.json [-o results.csv] [-j N] [--resume]\n"
                        "         [--no-timings] [--quiet] [--dry-run] [--precision P]\n"
                        "         [--memory-headroom F]\n"
                        "       mpirun -np N hetsim sweep SPEC.json -o results.csv\n"
                        "Spec format and CSV columns: docs/sweep.md.");
  if (rc)
    return rc < 0 ? 0 : rc;
  sweep_args_t a;
  if ((rc = read_sweep_args(opts, pos, npos, &a)))
    return rc;
  hs_sweep_spec_t spec;
  hs_sweep_spec_init(&spec);
  uint64_t *todo = NULL;
  size_t n_todo = 0, n_done = 0;
  int rank = 0, size = 1;
  if ((rc = load_spec(opts, a.spec_path, &spec)))
    goto out;
  if (a.dry_run) {
    printf("%s: %zu jobs of a %llu-job grid, %zu rows (%zu clusters, %zu models, %zu strategies, "
           "%zu price models)\n", spec.name, spec.n_jobs, (unsigned long long)spec.n_grid,
           spec.n_jobs * spec.n_prices, spec.n_clusters, spec.n_models, spec.n_strategies, spec.n_prices);
    goto out;
  }
  if ((rc = mpi_start(&argc, &argv, &rank, &size)) ||
      (rc = share_todo(&a, &spec, rank, &todo, &n_todo, &n_done)))
    goto out;
  rc = run_share(&a, &spec, rank, size, todo, n_todo, n_done);
out:
  free(todo);
  hs_sweep_spec_destroy(&spec);
  if (mpi)
    mpi->finalize();
  return rc;
}
