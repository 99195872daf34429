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
 * Protocol: the parent writes an item index (uint64) to a worker's command
 * pipe; the worker answers on its result pipe with a header {index, status,
 * length} and `length` bytes (the result, or the error message when status
 * is not HS_OK). The parent hands the next index to whichever worker
 * answered (dynamic balancing) and closes the command pipe when none is
 * left; the worker then _exits. Results reach `sink` in completion order, in
 * the parent, one at a time. A worker that dies (a crash in a planner, the
 * OOM killer) is reaped and replaced by a fresh one; its item goes to `lost`
 * so the caller can record it (a sweep writes error rows) and the run goes
 * on.
 */
#include "hs_export.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
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
} msg_head_t;

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

static void child_loop(int cmd_fd, int res_fd, hs_map_fn fn, void *ctx)
{
  for (;;) {
    uint64_t index;
    if (read_full(cmd_fd, &index, sizeof index) != 1)
      _exit(0);
    void *out = NULL;
    size_t len = 0;
    hs_error_t err;
    hs_error_init(&err);
    err.warn_fp = NULL;
    hs_status_t st = fn(ctx, (size_t)index, &out, &len, &err);
    msg_head_t h = {index, (int32_t)st, 0, 0};
    const void *data = out;
    if (st != HS_OK) {
      data = err.msg;
      len = strlen(err.msg);
    }
    h.len = len;
    bool ok = write_full(res_fd, &h, sizeof h) && (len == 0 || write_full(res_fd, data, len));
    free(out);
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

/* Starts worker k (pipes and fork); false when the system refuses. The
 * child closes every other worker's pipe ends. */
static bool spawn(int k, pid_t *pid, int *cmd, int *res, hs_map_fn fn, void *ctx)
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
      if (o == k || pid[o] <= 0)
        continue;
      if (cmd[o] >= 0)
        close(cmd[o]);
      close(res[o]);
    }
    close(c[1]);
    close(r[0]);
    child_loop(c[0], r[1], fn, ctx);
    _exit(0);
  }
  close(c[0]);
  close(r[1]);
  pid[k] = p;
  cmd[k] = c[1];
  res[k] = r[0];
  return true;
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
  pid_t pid[MAX_WORKERS];
  int cmd[MAX_WORKERS], res[MAX_WORKERS];
  for (int k = 0; k < MAX_WORKERS; k++) {
    pid[k] = -1;
    cmd[k] = res[k] = -1;
  }
  int64_t busy[MAX_WORKERS]; /* index in flight, -1 = idle */
  int started = 0;
  size_t next = 0, done = 0;
  bool stop = false;
  struct sigaction ign, old_pipe;
  memset(&ign, 0, sizeof ign);
  ign.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &ign, &old_pipe); /* a dead worker must not kill us on write */
  fflush(NULL);                        /* nothing buffered may be written twice */
  for (; started < workers; started++)
    if (!spawn(started, pid, cmd, res, fn, ctx))
      break;
  for (int k = 0; k < started; k++)
    busy[k] = -1;
  if (started == 0) {
    sigaction(SIGPIPE, &old_pipe, NULL);
    return run_inline(n, fn, sink, ctx, err);
  }
  /* hand out the first items */
  for (int k = 0; k < started; k++) {
    if (next < n) {
      uint64_t idx = next;
      if (write_full(cmd[k], &idx, sizeof idx))
        busy[k] = (int64_t)next++;
    }
    if (busy[k] < 0) {
      close(cmd[k]);
      cmd[k] = -1;
    }
  }
  struct pollfd fds[MAX_WORKERS];
  while (done < n && !stop) {
    int nf = 0;
    int map[MAX_WORKERS];
    for (int k = 0; k < started; k++)
      if (busy[k] >= 0) {
        fds[nf].fd = res[k];
        fds[nf].events = POLLIN;
        fds[nf].revents = 0;
        map[nf++] = k;
      }
    if (nf == 0)
      break; /* nothing in flight: every remaining worker failed to take work */
    int pr = poll(fds, (nfds_t)nf, -1);
    if (pr < 0 && errno == EINTR)
      continue;
    if (pr < 0) {
      st = hs_error_set(err, HS_EINTERNAL, "poll on worker pipes failed: %s", strerror(errno));
      break;
    }
    for (int f = 0; f < nf && !stop; f++) {
      if (!(fds[f].revents & (POLLIN | POLLHUP | POLLERR)))
        continue;
      int k = map[f];
      msg_head_t h;
      int rr = read_full(res[k], &h, sizeof h);
      char *data = NULL;
      if (rr == 1) {
        data = malloc(h.len + 1);
        if (!data || (h.len && read_full(res[k], data, h.len) != 1))
          rr = -1;
        else
          data[h.len] = '\0';
      }
      if (rr != 1 || h.index != (uint64_t)busy[k]) {
        int wst = 0;
        int64_t item = busy[k];
        if (cmd[k] >= 0)
          close(cmd[k]);
        close(res[k]);
        cmd[k] = res[k] = -1;
        kill(pid[k], SIGKILL); /* a garbled answer: make sure it is gone */
        waitpid(pid[k], &wst, 0);
        pid[k] = -1;
        busy[k] = -1;
        free(data);
        char why[128];
        snprintf(why, sizeof why, "worker process died (%s %d)",
                 WIFSIGNALED(wst) ? "signal" : "exit status",
                 WIFSIGNALED(wst) ? WTERMSIG(wst) : WEXITSTATUS(wst));
        if (!lost) {
          st = hs_error_set(err, HS_EINTERNAL, "item %lld: %s", (long long)item, why);
          stop = true;
          break;
        }
        done++;
        if (lost(ctx, (size_t)item, why)) {
          stop = true;
          break;
        }
        /* replace the worker and give it the next item */
        if (next < n && spawn(k, pid, cmd, res, fn, ctx)) {
          uint64_t idx = next;
          if (write_full(cmd[k], &idx, sizeof idx))
            busy[k] = (int64_t)next++;
          else {
            close(cmd[k]);
            cmd[k] = -1;
          }
        }
        continue;
      }
      done++;
      busy[k] = -1;
      if (h.status != HS_OK) {
        st = hs_error_set(err, (hs_status_t)h.status, "%s", data);
        stop = true;
      } else if (sink(ctx, (size_t)h.index, data, (size_t)h.len)) {
        stop = true;
      }
      free(data);
      if (!stop && next < n) {
        uint64_t idx = next;
        if (write_full(cmd[k], &idx, sizeof idx))
          busy[k] = (int64_t)next++;
      }
      if (busy[k] < 0 && cmd[k] >= 0) {
        close(cmd[k]);
        cmd[k] = -1;
      }
    }
  }
  if (st == HS_OK && !stop && done < n)
    st = hs_error_set(err, HS_EINTERNAL, "worker processes stopped with %zu of %zu items done", done, n);
  for (int k = 0; k < started; k++) {
    if (cmd[k] >= 0)
      close(cmd[k]);
    if (pid[k] > 0) {
      if (stop)
        kill(pid[k], SIGTERM);
      waitpid(pid[k], NULL, 0);
    }
    if (res[k] >= 0)
      close(res[k]);
  }
  sigaction(SIGPIPE, &old_pipe, NULL);
  return st;
}
