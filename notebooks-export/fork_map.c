/*
 * fork_map.c - runs independent work items on worker processes.
 *
 * Why processes and not threads: a sweep job plans and simulates, and the
 * simulator builds its topology with igraph, whose error-handling state is
 * process-global in Debian's build (clusters/topology.c says "build
 * topologies from one thread at a time"); two threads crash it ("Corrupt
 * finally stack"). Forked workers share nothing, so any library they call is
 * safe, and a worker that crashes costs its item, not the sweep.
 *
 * Protocol: the parent writes a command {item index, share length} and
 * `share length` bytes to a worker's command pipe; the worker answers on
 * its result pipe with a header {index, status, length, share length},
 * `length` bytes (the result, or the error message when status is not
 * HS_OK) and the share bytes. The parent hands the next index to whichever
 * worker answered (dynamic balancing) and closes the command pipe when none
 * is left; the worker then _exits.
 *
 * Shared searches: when a search memo is active (hs_search_memo_begin
 * before the map: a what-if's options, a sweep's points), each answer
 * carries the searches the worker stored while working on it
 * (hs_search_memo_export), the parent appends them to its log, and each
 * command carries the part of the log the worker has not been sent; the
 * worker imports it before it starts the item. So a device subset one
 * worker searched is not searched again by another, and, the memo being
 * exact, the results are those of one process searching everything. Results reach `sink` in completion order, in
 * the parent, one at a time. A worker that dies (a crash in a planner, the
 * OOM killer) is reaped and replaced by a fresh one; its item goes to `lost`
 * so the caller can record it (a sweep writes error rows) and the run goes
 * on.
 */
#include "hs_export.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_WORKERS 256

typedef struct msg_head {
  uint64_t index;
  int32_t status;
  uint32_t pad;
  uint64_t len;
  uint64_t share_len;   /* memo entries stored while working on the item */
} msg_head_t;

typedef struct cmd_head {
  uint64_t index;
  uint64_t share_len;   /* memo entries from the other workers */
} cmd_head_t;

static bool write_full(int fd, const void *buf, size_t n)
{
  const char *p = buf;
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

/* 1 = read n bytes, 0 = clean EOF before any byte, -1 = error or short. */
static int read_full(int fd, void *buf, size_t n)
{
  char *p = buf;
  size_t got = 0;
  while (got < n) {
    ssize_t r = read(fd, p + got, n - got);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      return got == 0 ? 0 : -1;
    got += (size_t)r;
  }
  return 1;
}

/* Reads a command's share bytes and imports them into this worker's search
 * memo; false when the pipe or memory fails (the worker then exits: the
 * parent sees it die and records its item as lost). */
static bool child_import(int cmd_fd, uint64_t share_len)
{
  if (share_len == 0)
    return true;
  if (share_len > SIZE_MAX)
    return false;
  unsigned char *buf = malloc((size_t)share_len);
  bool ok = buf && read_full(cmd_fd, buf, (size_t)share_len) == 1;
  if (ok)
    hs_search_memo_import(buf, (size_t)share_len); /* garbled or ENOMEM: only fewer reuses */
  free(buf);
  return ok;
}

static void child_loop(int cmd_fd, int res_fd, hs_map_fn fn, void *ctx)
{
  for (;;) {
    cmd_head_t c;
    if (read_full(cmd_fd, &c, sizeof c) != 1)
      _exit(0);
    if (!child_import(cmd_fd, c.share_len))
      _exit(1);
    void *out = NULL;
    size_t len = 0;
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_status_t st = fn(ctx, (size_t)c.index, &out, &len, &err);
    hs_bytes_t share = {.ok = true};
    hs_search_memo_export(&share);
    if (!share.ok)
      share.len = 0; /* out of memory: the other workers search it themselves */
    msg_head_t h = {c.index, (int32_t)st, 0, 0, share.len};
    const void *data = out;
    if (st != HS_OK) {
      data = err.msg;
      len = strlen(err.msg);
    }
    h.len = len;
    bool ok = write_full(res_fd, &h, sizeof h) && (len == 0 || write_full(res_fd, data, len)) &&
              (share.len == 0 || write_full(res_fd, share.p, share.len));
    free(out);
    free(share.p);
    if (!ok)
      _exit(1);
  }
}

static hs_status_t run_inline(size_t n, hs_map_fn fn, hs_sink_fn sink, void *ctx, hs_error_t *err)
{
  for (size_t i = 0; i < n; i++) {
    void *out = NULL;
    size_t len = 0;
    hs_status_t st = fn(ctx, i, &out, &len, err);
    if (st != HS_OK) {
      free(out);
      return st;
    }
    int stop = sink(ctx, i, out, len);
    free(out);
    if (stop)
      break;
  }
  return HS_OK;
}

/* The workers of one map: their processes and pipe ends, the item each has
 * in flight (-1 = idle), and the log of memo entries the workers shared
 * with how much of it each has been sent. */
typedef struct pool {
  int started;
  pid_t pid[MAX_WORKERS];
  int cmd[MAX_WORKERS], res[MAX_WORKERS];
  int64_t busy[MAX_WORKERS];
  size_t sent[MAX_WORKERS];
  hs_bytes_t log;
  size_t n, next, done;
  hs_map_fn fn;
  void *ctx;
} pool_t;

/* Starts worker k (pipes and fork); false when the system refuses. The
 * child closes every other worker's pipe ends. */
static bool spawn(pool_t *pl, int k)
{
  int c[2], r[2];
  if (pipe(c) != 0)
    return false;
  if (pipe(r) != 0) {
    close(c[0]);
    close(c[1]);
    return false;
  }
  pid_t p = fork();
  if (p < 0) {
    close(c[0]), close(c[1]), close(r[0]), close(r[1]);
    return false;
  }
  if (p == 0) {
    for (int o = 0; o < MAX_WORKERS; o++) {
      if (o == k || pl->pid[o] <= 0)
        continue;
      if (pl->cmd[o] >= 0)
        close(pl->cmd[o]);
      close(pl->res[o]);
    }
    close(c[1]);
    close(r[0]);
    child_loop(c[0], r[1], pl->fn, pl->ctx);
    _exit(0);
  }
  close(c[0]);
  close(r[1]);
  pl->pid[k] = p;
  pl->cmd[k] = c[1];
  pl->res[k] = r[0];
  pl->busy[k] = -1;
  pl->sent[k] = 0;
  return true;
}

/* Hands idle worker k the next item with the shared entries it has not
 * seen, or (none left, or its pipe is broken) closes its command pipe so
 * that it exits. */
static void give(pool_t *pl, int k)
{
  if (pl->next < pl->n) {
    cmd_head_t c = {pl->next, pl->log.len - pl->sent[k]};
    if (write_full(pl->cmd[k], &c, sizeof c) &&
        (c.share_len == 0 || write_full(pl->cmd[k], pl->log.p + pl->sent[k], c.share_len))) {
      pl->busy[k] = (int64_t)pl->next++;
      pl->sent[k] = pl->log.len;
      return;
    }
  }
  if (pl->cmd[k] >= 0)
    close(pl->cmd[k]);
  pl->cmd[k] = -1;
}

/* Reads worker k's answer: 1 with *h, *data (the result or message, NUL
 * after it; the caller frees it) and its share appended to the log; -1
 * when the answer is short or not for the item k was given. */
static int receive(pool_t *pl, int k, msg_head_t *h, char **data)
{
  *data = NULL;
  if (read_full(pl->res[k], h, sizeof *h) != 1 || h->index != (uint64_t)pl->busy[k] ||
      h->len >= SIZE_MAX || h->share_len >= SIZE_MAX)
    return -1;
  if (!(*data = malloc((size_t)h->len + 1)) || (h->len && read_full(pl->res[k], *data, (size_t)h->len) != 1))
    return -1;
  (*data)[h->len] = '\0';
  if (h->share_len == 0)
    return 1;
  unsigned char *share = malloc((size_t)h->share_len);
  int rr = share && read_full(pl->res[k], share, (size_t)h->share_len) == 1 ? 1 : -1;
  if (rr == 1) {
    hs_bytes_put(&pl->log, share, (size_t)h->share_len);
    pl->log.ok = true; /* out of memory left the log as it was: those entries go unshared */
  }
  free(share);
  return rr;
}

/* Worker k died or garbled its answer: reaps it, reports its item to
 * `lost` (or fails the map without one), and starts a replacement for the
 * next item. Returns true when the map must stop. */
static bool bury(pool_t *pl, int k, hs_lost_fn lost, hs_status_t *st, hs_error_t *err)
{
  int wst = 0;
  int64_t item = pl->busy[k];
  if (pl->cmd[k] >= 0)
    close(pl->cmd[k]);
  close(pl->res[k]);
  pl->cmd[k] = pl->res[k] = -1;
  kill(pl->pid[k], SIGKILL); /* a garbled answer: make sure it is gone */
  waitpid(pl->pid[k], &wst, 0);
  pl->pid[k] = -1;
  pl->busy[k] = -1;
  char why[128];
  snprintf(why, sizeof why, "worker process died (%s %d)", WIFSIGNALED(wst) ? "signal" : "exit status",
           WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
  if (!lost) {
    *st = hs_error_set(err, HS_EINTERNAL, "item %lld: %s", (long long)item, why);
    return true;
  }
  pl->done++;
  if (lost(pl->ctx, (size_t)item, why))
    return true;
  if (pl->next < pl->n && spawn(pl, k))
    give(pl, k);
  return false;
}

/* Waits for answers and hands out items until every item is done or a sink
 * or an error stops the map (then returns true). */
static bool serve(pool_t *pl, hs_sink_fn sink, hs_lost_fn lost, hs_status_t *st, hs_error_t *err)
{
  struct pollfd fds[MAX_WORKERS];
  int map[MAX_WORKERS];
  while (pl->done < pl->n) {
    int nf = 0;
    for (int k = 0; k < pl->started; k++)
      if (pl->busy[k] >= 0) {
        fds[nf] = (struct pollfd){.fd = pl->res[k], .events = POLLIN};
        map[nf++] = k;
      }
    if (nf == 0)
      return false; /* nothing in flight: every remaining worker failed to take work */
    int pr = poll(fds, (nfds_t)nf, -1);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr < 0) {
      *st = hs_error_set(err, HS_EINTERNAL, "poll on worker pipes failed: %s", strerror(errno));
      return true;
    }
    for (int f = 0; f < nf; f++) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      int k = map[f];
      msg_head_t h;
      char *data = NULL;
      int rr = receive(pl, k, &h, &data);
      if (rr != 1) {
        free(data);
        if (bury(pl, k, lost, st, err))
          return true;
        continue;
      }
      pl->done++;
      pl->busy[k] = -1;
      bool stop = false;
      if (h.status != HS_OK) {
        *st = hs_error_set(err, (hs_status_t)h.status, "%s", data);
        stop = true;
      } else {
        stop = sink(pl->ctx, (size_t)h.index, data, (size_t)h.len) != 0;
      }
      free(data);
      if (stop)
        return true;
      give(pl, k);
    }
  }
  return false;
}

hs_status_t hs_map_processes(size_t n, int workers, hs_map_fn fn, hs_sink_fn sink, hs_lost_fn lost,
                             void *ctx, hs_error_t *err)
{
  if (workers > MAX_WORKERS)
    workers = MAX_WORKERS;
  if ((size_t)workers > n)
    workers = (int)n;
  if (workers <= 1)
    return run_inline(n, fn, sink, ctx, err);

  hs_status_t st = HS_OK;
  pool_t *pl = calloc(1, sizeof *pl);
  if (!pl)
    return run_inline(n, fn, sink, ctx, err);
  *pl = (pool_t){.n = n, .fn = fn, .ctx = ctx, .log = {.ok = true}};
  for (int k = 0; k < MAX_WORKERS; k++) {
    pl->pid[k] = -1;
    pl->cmd[k] = pl->res[k] = -1;
    pl->busy[k] = -1;
  }
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe); /* a dead worker must not kill us on write */
  fflush(NULL);                        /* nothing buffered may be written twice */
  for (; pl->started < workers; pl->started++)
    if (!spawn(pl, pl->started))
      break;
  if (pl->started == 0) {
    sigaction(SIGPIPE, &old_pipe, NULL);
    free(pl);
    return run_inline(n, fn, sink, ctx, err);
  }
  for (int k = 0; k < pl->started; k++)
    give(pl, k);
  bool stop = serve(pl, sink, lost, &st, err);
  if (st == HS_OK && !stop && pl->done < n)
    st = hs_error_set(err, HS_EINTERNAL, "worker processes stopped with %zu of %zu items done", pl->done, n);
  for (int k = 0; k < pl->started; k++) {
    if (pl->cmd[k] >= 0)
      close(pl->cmd[k]);
    if (pl->pid[k] > 0) {
      if (stop)
        kill(pl->pid[k], SIGTERM);
      waitpid(pl->pid[k], NULL, 0);
    }
    if (pl->res[k] >= 0)
      close(pl->res[k]);
  }
  sigaction(SIGPIPE, &old_pipe, NULL);
  free(pl->log.p);
  free(pl);
  return st;
}
