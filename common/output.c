/*
 * output.c - replace-by-rename outputs (hs_output.h).
 *
 * Representation: an open output is the target path, the temporary's path
 * and the stdio stream on the temporary. The temporary is always in the
 * target's directory, so rename(2) is atomic (same file system): a reader of
 * the target sees the old bytes or the new ones, never a prefix.
 *
 * The target is checked with lstat(2) at open and again just before the
 * rename; in between someone could put something else there (the checks
 * narrow the window, they cannot close it: POSIX has no rename-if-regular).
 */
/* mkstemp, fchmod, lstat, O_NOFOLLOW, O_CLOEXEC */
#define _XOPEN_SOURCE 700

#include "hs_output.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static bool is_stdout_path(const char *path) { return strcmp(path, "-") == 0; }

static const char *kind_of(mode_t m)
{
  if (S_ISDIR(m))
    return "a directory";
  if (S_ISFIFO(m))
    return "a FIFO";
  if (S_ISCHR(m))
    return "a character device";
  if (S_ISBLK(m))
    return "a block device";
  if (S_ISSOCK(m))
    return "a socket";
  if (S_ISLNK(m))
    return "a symbolic link";
  return "not a regular file";
}

/* The refusals of the file comment for an existing target with lstat `sb`. */
static hs_status_t check_stat(const char *path, const struct stat *sb, hs_error_t *err)
{
  if (S_ISLNK(sb->st_mode))
    return hs_error_set(err, HS_EINVAL,
                        "%s: is a symbolic link: refusing to replace it (give the path it names)", path);
  if (!S_ISREG(sb->st_mode))
    return hs_error_set(err, HS_EINVAL, "%s: is %s, not a regular file: refusing to write it", path,
                        kind_of(sb->st_mode));
  if ((sb->st_mode & (S_IWUSR | S_IWGRP | S_IWOTH)) == 0)
    return hs_error_set(err, HS_EINVAL, "%s: is read-only (mode %04o): refusing to replace it", path,
                        (unsigned)(sb->st_mode & 07777));
  if (access(path, W_OK) != 0)
    return hs_error_set(err, HS_EINVAL, "%s: not writable: %s", path, strerror(errno));
  return HS_OK;
}

/* HS_OK with *exists false when there is no target yet, true when there is
 * one that may be replaced (*sb its lstat). */
static hs_status_t check_target(const char *path, struct stat *sb, bool *exists, hs_error_t *err)
{
  *exists = false;
  if (lstat(path, sb) != 0)
    return errno == ENOENT ? HS_OK
                           : hs_error_set(err, HS_EIO, "%s: cannot write: %s", path, strerror(errno));
  *exists = true;
  return check_stat(path, sb, err);
}

/* The process umask without changing it where Linux tells it
 * (/proc/self/status, since 4.7); else read by setting it, briefly, to the
 * stricter 077, so that a file another thread creates meanwhile is at worst
 * too private. */
static mode_t current_umask(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (f) {
    char line[256];
    unsigned m = 0;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
      found = sscanf(line, "Umask: %o", &m) == 1;
    fclose(f);
    if (found)
      return (mode_t)(m & 0777);
  }
  mode_t m = umask(077);
  umask(m);
  return m;
}

void hs_output_init(hs_output_t *o) { memset(o, 0, sizeof *o); }

hs_status_t hs_output_flush_stdout(hs_error_t *err)
{
  errno = 0;
  bool bad = fflush(stdout) != 0;
  int e = errno;
  if (!bad && !ferror(stdout))
    return HS_OK;
  return hs_error_set(err, HS_EIO, "standard output: write error%s%s", e ? ": " : "", e ? strerror(e) : "");
}

hs_status_t hs_output_check(const char *path, hs_error_t *err)
{
  struct stat sb;
  bool exists;
  if (is_stdout_path(path))
    return HS_OK;
  if (!*path)
    return hs_error_set(err, HS_EINVAL, "empty output path");
  return check_target(path, &sb, &exists, err);
}

hs_status_t hs_output_open(hs_output_t *o, const char *path, hs_error_t *err)
{
  hs_output_init(o);
  if (is_stdout_path(path)) {
    o->path = strdup(path);
    if (!o->path)
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    o->f = stdout;
    return HS_OK;
  }
  if (!*path)
    return hs_error_set(err, HS_EINVAL, "empty output path");
  struct stat sb;
  bool exists;
  hs_status_t st = check_target(path, &sb, &exists, err);
  if (st != HS_OK)
    return st;
  o->mode = exists ? (unsigned)(sb.st_mode & 07777) : (unsigned)(0666 & ~current_umask());

  /* "<dir>/.<base>.XXXXXX": hidden, named after its target for whoever
   * finds one left by a killed run; the base is cut so the name stays well
   * under NAME_MAX */
  const char *base = strrchr(path, '/');
  size_t dir_len = base ? (size_t)(base - path) + 1 : 0;
  base = base ? base + 1 : path;
  size_t base_len = HS_MIN(strlen(base), (size_t)200);
  size_t n = dir_len + 1 + base_len + 8;
  o->path = strdup(path);
  o->tmp = malloc(n);
  if (!o->path || !o->tmp) {
    hs_output_abort(o);
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  }
  snprintf(o->tmp, n, "%.*s.%.*s.XXXXXX", (int)dir_len, path, (int)base_len, base);
  int fd = mkstemp(o->tmp);
  if (fd < 0) {
    int e = errno;
    free(o->tmp);
    o->tmp = NULL;
    hs_output_abort(o);
    return hs_error_set(err, HS_EIO, "%s: cannot create a temporary file beside it: %s", path,
                        strerror(e));
  }
  o->f = fdopen(fd, "w");
  if (!o->f) {
    int e = errno;
    close(fd);
    hs_output_abort(o);
    return hs_error_set(err, HS_EIO, "%s: cannot open for writing: %s", path, strerror(e));
  }
  return HS_OK;
}

hs_status_t hs_output_commit(hs_output_t *o, hs_error_t *err)
{
  if (!o->f || !o->path)
    return hs_error_set(err, HS_EINTERNAL, "output committed without being open");
  hs_status_t st = HS_OK;
  if (!o->tmp) { /* stdout: the program closes it (cli/main.c) */
    st = hs_output_flush_stdout(err);
    o->f = NULL;
    hs_output_abort(o);
    return st;
  }
  /* e: the first failure's errno, -1 when the stream lost it (an earlier
   * write failed and the flush found nothing left to retry) */
  errno = 0;
  int e = 0;
  if (fflush(o->f) != 0 || ferror(o->f))
    e = errno ? errno : -1;
  if (fchmod(fileno(o->f), (mode_t)o->mode) != 0 && !e)
    e = errno;
  errno = 0;
  if (fclose(o->f) != 0 && !e)
    e = errno ? errno : -1;
  o->f = NULL;
  struct stat sb;
  bool exists;
  if (e)
    st = hs_error_set(err, HS_EIO, "%s: write error%s%s", o->path, e > 0 ? ": " : "",
                      e > 0 ? strerror(e) : "");
  if (st == HS_OK)
    st = check_target(o->path, &sb, &exists, err);
  if (st == HS_OK && rename(o->tmp, o->path) != 0)
    st = hs_error_set(err, HS_EIO, "%s: cannot replace it: %s", o->path, strerror(errno));
  if (st == HS_OK) {
    free(o->tmp);
    o->tmp = NULL; /* committed: nothing for abort to remove */
  }
  hs_output_abort(o);
  return st;
}

void hs_output_abort(hs_output_t *o)
{
  if (!o)
    return;
  if (o->f && o->f != stdout)
    fclose(o->f);
  if (o->tmp)
    unlink(o->tmp);
  free(o->tmp);
  free(o->path);
  hs_output_init(o);
}

hs_status_t hs_output_write_text(const char *path, const char *text, hs_error_t *err)
{
  hs_output_t o;
  hs_status_t st = hs_output_open(&o, path, err);
  if (st != HS_OK)
    return st;
  fputs(text, o.f); /* an error sticks to the stream: commit sees it */
  return hs_output_commit(&o, err);
}

hs_status_t hs_output_open_append(const char *path, FILE **f, hs_error_t *err)
{
  *f = NULL;
  struct stat sb;
  /* O_NONBLOCK: opening a FIFO that slipped past the check must not hang */
  int fd = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP && lstat(path, &sb) == 0)
      return check_stat(path, &sb, err);
    return hs_error_set(err, HS_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
  }
  hs_status_t st = HS_OK;
  if (fstat(fd, &sb) != 0)
    st = hs_error_set(err, HS_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
  else
    st = check_stat(path, &sb, err);
  int fl = fcntl(fd, F_GETFL);
  if (st == HS_OK && (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) != 0))
    st = hs_error_set(err, HS_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
  if (st == HS_OK && !(*f = fdopen(fd, "a")))
    st = hs_error_set(err, HS_EIO, "%s: cannot open for appending: %s", path, strerror(errno));
  if (st != HS_OK)
    close(fd);
  return st;
}
