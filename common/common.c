/*
 * common.c - status names, the error record, allocation and file helpers.
 */
#include "hs_common.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const status_names[] = {
#define HS__STATUS_NAME(name, msg) "HS_" #name,
    HS_STATUS_LIST(HS__STATUS_NAME)
#undef HS__STATUS_NAME
};

static const char *const status_msgs[] = {
#define HS__STATUS_MSG(name, msg) msg,
    HS_STATUS_LIST(HS__STATUS_MSG)
#undef HS__STATUS_MSG
};

const char *hs_status_name(hs_status_t st)
{
  if ((int)st < 0 || st >= HS_STATUS__COUNT)
    return "HS_UNKNOWN";
  return status_names[st];
}

const char *hs_status_message(hs_status_t st)
{
  if ((int)st < 0 || st >= HS_STATUS__COUNT)
    return "unknown status";
  return status_msgs[st];
}

int hs_status_exit_code(hs_status_t st)
{
  switch (st) {
  case HS_OK:
    return 0;
  case HS_EINVAL:
  case HS_EPARSE:
  case HS_ENOTFOUND:
  case HS_EIO:
  case HS_ELIMIT:
  case HS_EUNSUPPORTED:
    return 2;
  case HS_EINFEASIBLE: /* simulated or searched, but no plan holds */
    return 3;
  default:
    return 1;
  }
}

void hs_error_init(hs_error_t *err)
{
  if (!err)
    return;
  memset(err, 0, sizeof(*err));
  err->warn_fp = stderr;
}

hs_status_t hs_error_set(hs_error_t *err, hs_status_t st, const char *fmt, ...)
{
  if (!err || err->status != HS_OK)
    return st;
  err->status = st;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
  va_end(ap);
  return st;
}

void hs_error_clear(hs_error_t *err)
{
  if (!err)
    return;
  err->status = HS_OK;
  err->msg[0] = '\0';
}

void hs_error_warn(hs_error_t *err, const char *fmt, ...)
{
  if (!err)
    return;
  err->n_warnings++;
  if (!err->warn_fp)
    return;
  va_list ap;
  va_start(ap, fmt);
  fputs("warning: ", err->warn_fp);
  vfprintf(err->warn_fp, fmt, ap);
  fputc('\n', err->warn_fp);
  va_end(ap);
}

void hs_error_prefix(hs_error_t *err, const char *prefix)
{
  if (!err || !prefix || err->status == HS_OK)
    return;
  char tmp[HS_ERROR_MSG_MAX];
  size_t n = strlen(prefix);
  if (n > HS_ERROR_MSG_MAX / 2)
    n = HS_ERROR_MSG_MAX / 2;
  memcpy(tmp, prefix, n);
  tmp[n] = ':';
  tmp[n + 1] = ' ';
  hs_strlcpy(tmp + n + 2, err->msg, sizeof(tmp) - n - 2);
  memcpy(err->msg, tmp, sizeof(tmp));
}

hs_time_t hs_time_from_s(double s)
{
  if (!(s > 0.0))
    return 0;
  double ns = s * 1e9;
  if (ns >= 9.2e18)
    return HS_TIME_MAX;
  /* llround(ns), without the libm call (it was 1.4% of a hapt search's
   * instructions): ns - t is exact (below 2^52 it is ns's fractional
   * bits; above, ns is a whole number and t equals it), so the halfway
   * case rounds away from zero exactly as llround does */
  hs_time_t t = (hs_time_t)ns;
  return t + (ns - (double)t >= 0.5);
}

hs_status_t hs_reserve(void **data, size_t *cap, size_t need, size_t elem_size)
{
  if (need <= *cap)
    return HS_OK;
  size_t ncap = *cap ? *cap : 8;
  while (ncap < need) {
    if (ncap > SIZE_MAX / 2)
      return HS_ENOMEM;
    ncap *= 2;
  }
  void *p = hs_reallocarray(*data, ncap, elem_size);
  if (!p)
    return HS_ENOMEM;
  *data = p;
  *cap = ncap;
  return HS_OK;
}

void hs_bytes_put(hs_bytes_t *b, const void *src, size_t n)
{
  if (!b->ok || n == 0)
    return;
  if (n > SIZE_MAX - b->len || hs_reserve((void **)&b->p, &b->cap, b->len + n, 1) != HS_OK) {
    b->ok = false;
    return;
  }
  memcpy(b->p + b->len, src, n);
  b->len += n;
}

bool hs_bytes_get(hs_bytes_reader_t *r, void *dst, size_t n)
{
  if (!r->ok || n > r->len - r->pos) {
    r->ok = false;
    return false;
  }
  memcpy(dst, r->p + r->pos, n);
  r->pos += n;
  return true;
}

void *hs_calloc(size_t n, size_t size)
{
  if (n == 0 || size == 0)
    n = size = 1;
  if (n > SIZE_MAX / size)
    return NULL;
  return calloc(n, size);
}

void *hs_reallocarray(void *p, size_t n, size_t size)
{
  if (n == 0 || size == 0)
    n = size = 1;
  if (n > SIZE_MAX / size)
    return NULL;
  return realloc(p, n * size);
}

void hs_free(void *p) { free(p); }

bool hs_strlcpy(char *dst, const char *src, size_t dst_size)
{
  if (dst_size == 0)
    return false;
  size_t n = strlen(src);
  bool fits = n < dst_size;
  if (!fits)
    n = dst_size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return fits;
}

hs_status_t hs_file_read(const char *path, size_t max_bytes, char **out, size_t *out_len,
                         hs_error_t *err)
{
  *out = NULL;
  if (out_len)
    *out_len = 0;
  /* O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer
   * forever; anything that is not a regular file is refused before a read */
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return hs_error_set(err, errno == ENOENT ? HS_ENOTFOUND : HS_EIO, "%s: cannot open: %s", path,
                        strerror(errno));
  struct stat sb;
  if (fstat(fd, &sb) != 0) {
    int e = errno;
    close(fd);
    return hs_error_set(err, HS_EIO, "%s: cannot stat: %s", path, strerror(e));
  }
  if (!S_ISREG(sb.st_mode)) {
    close(fd);
    return hs_error_set(err, HS_EIO, "%s: not a regular file (%s); inputs are read from regular "
                        "files only", path, S_ISDIR(sb.st_mode) ? "a directory"
                        : S_ISFIFO(sb.st_mode) ? "a FIFO" : S_ISCHR(sb.st_mode) ? "a character device"
                        : S_ISBLK(sb.st_mode) ? "a block device" : S_ISSOCK(sb.st_mode) ? "a socket"
                        : "a special file");
  }
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) < 0) {
    int e = errno;
    close(fd);
    return hs_error_set(err, HS_EIO, "%s: cannot open: %s", path, strerror(e));
  }
  FILE *f = fdopen(fd, "rb");
  if (!f) {
    int e = errno;
    close(fd);
    return hs_error_set(err, HS_EIO, "%s: cannot open: %s", path, strerror(e));
  }
  size_t cap = 0, len = 0;
  char *buf = NULL;
  hs_status_t st = HS_OK;
  /* a regular file's size is known: reserve it at once (plus one read's slack
   * to see EOF) so that a large input is not copied while growing */
  if (sb.st_size > 0 && (uintmax_t)sb.st_size <= max_bytes &&
      hs_reserve((void **)&buf, &cap, (size_t)sb.st_size + 2, 1) != HS_OK) {
    fclose(f);
    return hs_error_set(err, HS_ENOMEM, "%s: out of memory reading file", path);
  }
  for (;;) {
    if (len + 1 >= cap && hs_reserve((void **)&buf, &cap, len + 65536 + 1, 1) != HS_OK) {
      st = hs_error_set(err, HS_ENOMEM, "%s: out of memory reading file", path);
      break;
    }
    size_t n = fread(buf + len, 1, cap - len - 1, f);
    len += n;
    if (len > max_bytes) {
      st = hs_error_set(err, HS_ELIMIT, "%s: file larger than the limit of %zu bytes", path,
                        max_bytes);
      break;
    }
    if (n == 0) {
      if (ferror(f))
        st = hs_error_set(err, HS_EIO, "%s: read error", path);
      break;
    }
  }
  fclose(f);
  if (st != HS_OK) {
    free(buf);
    return st;
  }
  buf[len] = '\0';
  *out = buf;
  if (out_len)
    *out_len = len;
  return HS_OK;
}

const char *hs_data_dir(void)
{
  const char *d = getenv("HETSIM_DATA");
  if (d && *d)
    return d;
  return HS_SOURCE_DIR;
}

const char *hs_basename(const char *path)
{
  const char *s = strrchr(path, '/');
  return s ? s + 1 : path;
}

bool hs_str_endswith(const char *s, const char *suffix)
{
  size_t a = strlen(s), b = strlen(suffix);
  return a >= b && strcmp(s + a - b, suffix) == 0;
}

char *hs_fmt_bytes(double bytes, char *buf, size_t n)
{
  static const char *const unit[] = {"B", "kB", "MB", "GB", "TB", "PB", "EB"};
  int u = 0;
  double v = bytes;
  while (fabs(v) >= 1000.0 && u < 6) {
    v /= 1000.0;
    u++;
  }
  snprintf(buf, n, u == 0 ? "%.0f %s" : "%.1f %s", v, unit[u]);
  return buf;
}

static const char *const dtype_names[HS_DTYPE__COUNT] = {"fp32", "fp16", "bf16", "fp8"};

const char *hs_dtype_name(hs_dtype_t d)
{
  return (int)d >= 0 && d < HS_DTYPE__COUNT ? dtype_names[d] : "?";
}

hs_status_t hs_dtype_parse(const char *s, hs_dtype_t *out)
{
  static const struct { const char *name; hs_dtype_t dt; } alias[] = {
      {"fp32", HS_DTYPE_FP32}, {"float32", HS_DTYPE_FP32}, {"float", HS_DTYPE_FP32},
      {"fp16", HS_DTYPE_FP16}, {"float16", HS_DTYPE_FP16}, {"half", HS_DTYPE_FP16},
      {"bf16", HS_DTYPE_BF16}, {"bfloat16", HS_DTYPE_BF16}, {"fp8", HS_DTYPE_FP8},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(alias); i++)
    if (strcmp(s, alias[i].name) == 0) {
      *out = alias[i].dt;
      return HS_OK;
    }
  return HS_EINVAL;
}

double hs_dtype_bytes(hs_dtype_t d)
{
  switch (d) {
  case HS_DTYPE_FP32: return 4.0;
  case HS_DTYPE_FP8: return 1.0;
  default: return 2.0;
  }
}
