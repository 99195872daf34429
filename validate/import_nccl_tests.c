/*
 * import_nccl_tests.c - reads nccl-tests output (all_reduce_perf,
 * all_gather_perf, reduce_scatter_perf, alltoall_perf, sendrecv_perf) into
 * rows, as printed:
 *
 *   #  Rank  0 Group  0 Pid  85 on host-0 device  0 [0000:cc:00] NVIDIA H200
 *   #       size   count   type   redop   root   time  algbw  busbw #wrong   time  algbw  busbw #wrong
 *          1024     128   float    none     -1  21.75   0.05   0.02      0  20.94   0.05   0.02      0
 *
 * Older nccl-tests print no "root" column and "error" for "#wrong"; mpirun
 * may prefix every line with "[1,0]<stdout>:"; NCCL INFO lines and anything
 * else that is not a rank line, the table header or a row is skipped.
 *
 * Invariants after a successful parse: at least one row; every row has both
 * out-of-place and in-place columns, a size >= 0, times > 0, and a busbw that
 * equals algbw times the collective's factor for `nranks` to the printed
 * rounding (nccl-tests computes busbw from the unrounded algbw, then prints
 * both with two decimals). The last check is what makes a wrong collective
 * or rank count an error instead of a silently wrong fit. O(file size).
 */
#include "validate_internal.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define MAX_ROWS 100000
#define MAX_TOKENS 16
#define MAX_LINE 4096
#define MAX_RANKS (1 << 20)

static const char *const coll_names[HS_NT__COUNT] = {"all_reduce", "all_gather", "reduce_scatter",
                                                     "alltoall", "sendrecv"};

const char *hs_nt_coll_name(hs_nt_coll_t c)
{
  return (unsigned)c < HS_NT__COUNT ? coll_names[c] : "?";
}

/* Lower-case copy of s without '_' and '-', at most n-1 bytes. */
static void squash(const char *s, char *out, size_t n)
{
  size_t k = 0;
  for (; *s && k + 1 < n; s++)
    if (*s != '_' && *s != '-')
      out[k++] = (char)tolower((unsigned char)*s);
  out[k] = '\0';
}

hs_status_t hs_nt_coll_parse(const char *s, hs_nt_coll_t *out)
{
  char a[64], b[64];
  if (!s)
    return HS_ENOTFOUND;
  squash(s, a, sizeof a);
  size_t la = strlen(a);
  if (la > 4 && strcmp(a + la - 4, "perf") == 0)
    a[la - 4] = '\0';
  for (int c = 0; c < HS_NT__COUNT; c++) {
    squash(coll_names[c], b, sizeof b);
    if (strcmp(a, b) == 0) {
      *out = (hs_nt_coll_t)c;
      return HS_OK;
    }
  }
  return HS_ENOTFOUND;
}

double hs_nt_busbw_factor(hs_nt_coll_t c, int32_t n)
{
  if (n < 1)
    return NAN;
  switch (c) {
  case HS_NT_ALL_REDUCE:
    return 2.0 * (n - 1) / n;
  case HS_NT_ALL_GATHER:
  case HS_NT_REDUCE_SCATTER:
  case HS_NT_ALLTOALL:
    return (double)(n - 1) / n;
  case HS_NT_SENDRECV:
    return 1.0;
  default:
    return NAN;
  }
}

const char *hs_nt_algo_name(int a)
{
  static const char *const names[] = {"default", "ring", "tree", "nvls"};
  return a >= 0 && a < (int)HS_ARRAY_LEN(names) ? names[a] : "?";
}

hs_status_t hs_nt_algo_parse(const char *s, int *out)
{
  static const struct { const char *name; int algo; } k[] = {
      {"ring", HS_NT_ALGO_RING}, {"tree", HS_NT_ALGO_TREE}, {"nvls", HS_NT_ALGO_NVLS},
      {"nvlstree", HS_NT_ALGO_NVLS}};
  for (size_t i = 0; s && i < HS_ARRAY_LEN(k); i++)
    if (strcasecmp(s, k[i].name) == 0) {
      *out = k[i].algo;
      return HS_OK;
    }
  return HS_EINVAL;
}

/* The value of NCCL_ALGO on the line [s, e) into val ("NCCL_ALGO=Tree",
 * "export NCCL_ALGO=Tree", NCCL INFO's "NCCL_ALGO set by environment to
 * Tree"); false when the line does not set it. O(line). */
static bool algo_on_line(const char *s, const char *e, char *val, size_t n)
{
  static const char key[] = "NCCL_ALGO";
  static const char env[] = " set by environment to ";
  for (const char *p = s; p + sizeof key - 1 <= e; p++) {
    if (memcmp(p, key, sizeof key - 1) != 0)
      continue;
    const char *v = p + sizeof key - 1;
    if (v < e && *v == '=')
      v++;
    else if ((size_t)(e - v) >= sizeof env - 1 && memcmp(v, env, sizeof env - 1) == 0)
      v += sizeof env - 1;
    else
      continue;
    size_t k = 0;
    while (v + k < e && k + 1 < n && v[k] != ' ' && v[k] != '\r' && v[k] != '\t' && v[k] != '"' &&
           v[k] != '\'')
      k++;
    memcpy(val, v, k);
    val[k] = '\0';
    return true;
  }
  return false;
}

/* NCCL_ALGO set on line [b, e) into *algo / *algo_line; a value hetsim
 * does not fit, or one that contradicts an earlier line, is refused naming
 * the line. O(line). */
static hs_status_t note_algo(const char *b, const char *e, const char *file, int32_t line,
                             int *algo, int32_t *algo_line, hs_error_t *err)
{
  char val[32];
  if (!algo_on_line(b, e, val, sizeof val))
    return HS_OK;
  int a = 0;
  if (hs_nt_algo_parse(val, &a) != HS_OK)
    return hs_error_set(err, HS_EINVAL, "%s:%d: NCCL_ALGO \"%s\": hetsim fits Ring, Tree or NVLS "
                        "(NVLSTree) runs, one algorithm per file", file, line, val);
  if (*algo && *algo != a)
    return hs_error_set(err, HS_EINVAL, "%s:%d: NCCL_ALGO %s, but line %d says %s", file, line,
                        val, *algo_line, hs_nt_algo_name(*algo));
  *algo = a;
  *algo_line = line;
  return HS_OK;
}

size_t hs__nt_missing_facts(const hs_nccl_tests_t *t, const hs_nt_opts_t *o, bool ranks,
                            char *buf, size_t n)
{
  size_t k = 0;
  buf[0] = '\0';
  const char *facts[3];
  int nf = 0;
  if (ranks)
    facts[nf++] = "the number of ranks (give --ranks N)";
  if (!t->gpu_name[0] && !(o && o->gpu_given))
    facts[nf++] = "the GPU (no device lines; give --gpu NAME)";
  if (t->n_nodes <= 0 && t->gpus_per_node <= 0)
    facts[nf++] = "how the ranks sit on nodes (give --gpus-per-node K)";
  for (int i = 0; i < nf && k < n; i++)
    k += (size_t)snprintf(buf + k, n - k, "%s%s", i ? ", " : "", facts[i]);
  return (size_t)nf;
}

void hs_nt_opts_init(hs_nt_opts_t *o)
{
  memset(o, 0, sizeof *o);
  o->coll = -1;
}

void hs_nccl_tests_init(hs_nccl_tests_t *t) { memset(t, 0, sizeof *t); }

void hs_nccl_tests_destroy(hs_nccl_tests_t *t)
{
  if (!t)
    return;
  free(t->rows);
  memset(t, 0, sizeof *t);
}

/* Bytes per element of an nccl-tests type name; 0 when unknown. */
static int word_size(const char *type)
{
  static const struct { const char *name; int bytes; } w[] = {
      {"int8", 1},    {"uint8", 1},   {"char", 1},    {"f8e4m3", 1}, {"f8e5m2", 1},
      {"half", 2},    {"bfloat16", 2}, {"float16", 2}, {"int32", 4},  {"uint32", 4},
      {"int", 4},     {"float", 4},   {"float32", 4}, {"int64", 8},  {"uint64", 8},
      {"double", 8},  {"float64", 8},
  };
  for (size_t i = 0; i < HS_ARRAY_LEN(w); i++)
    if (strcmp(type, w[i].name) == 0)
      return w[i].bytes;
  return 0;
}

typedef struct tokens {
  char buf[MAX_LINE];
  char *t[MAX_TOKENS];
  int n;
  bool more;               /* more tokens than MAX_TOKENS */
} tokens_t;

/* Splits line [s, e) on blanks into tok (a private copy). */
static void split(const char *s, const char *e, tokens_t *tok)
{
  size_t len = (size_t)(e - s);
  if (len >= sizeof tok->buf)
    len = sizeof tok->buf - 1;
  memcpy(tok->buf, s, len);
  tok->buf[len] = '\0';
  tok->n = 0;
  tok->more = false;
  char *p = tok->buf;
  for (;;) {
    while (*p == ' ' || *p == '\t' || *p == '\r')
      p++;
    if (!*p)
      break;
    if (tok->n == MAX_TOKENS) {
      tok->more = true;
      break;
    }
    tok->t[tok->n++] = p;
    while (*p && *p != ' ' && *p != '\t' && *p != '\r')
      p++;
    if (*p)
      *p++ = '\0';
  }
}

static bool parse_i64(const char *s, int64_t *out)
{
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (end == s || *end || errno)
    return false;
  *out = (int64_t)v;
  return true;
}

/* A finite number; *decimals gets the digits after the point (precision of
 * the printed value). */
static bool parse_num(const char *s, double *out, int *decimals)
{
  char *end = NULL;
  errno = 0;
  double v = strtod(s, &end);
  if (end == s || *end || errno || !isfinite(v))
    return false;
  /* strtod also takes "nan", "inf" and hex; nccl-tests prints plain decimals */
  for (const char *p = s; *p; p++)
    if (!(isdigit((unsigned char)*p) || *p == '.' || *p == '-' || *p == '+' || *p == 'e' ||
          *p == 'E'))
      return false;
  const char *dot = strchr(s, '.');
  int d = 0;
  if (dot)
    for (const char *p = dot + 1; isdigit((unsigned char)*p); p++)
      d++;
  if (decimals)
    *decimals = d;
  *out = v;
  return true;
}

/* Skips an mpirun output prefix "[1,0]<stdout>:". */
static const char *skip_prefix(const char *s, const char *e)
{
  if (s < e && *s == '[') {
    const char *p = s;
    while (p < e && *p != ']')
      p++;
    const char *tag = "]<stdout>:";
    size_t lt = strlen(tag);
    if ((size_t)(e - p) >= lt && memcmp(p, tag, lt) == 0)
      return p + lt;
  }
  return s;
}

typedef struct host {
  char name[64];
} host_t;

static hs_status_t add_row(hs_nccl_tests_t *t, size_t *cap, const hs_nt_row_t *r)
{
  if (hs_reserve((void **)&t->rows, cap, (size_t)t->n_rows + 1, sizeof *t->rows) != HS_OK)
    return HS_ENOMEM;
  t->rows[t->n_rows++] = *r;
  return HS_OK;
}

static const char *col_names_root[] = {"size",   "count", "type",  "redop", "root",
                                       "time",   "algbw", "busbw", "#wrong", "time",
                                       "algbw",  "busbw", "#wrong"};
static const char *col_names_old[] = {"size",  "count", "type",  "redop", "time",  "algbw",
                                      "busbw", "error", "time",  "algbw", "busbw", "error"};

/* Reads one data row of `ncol` columns (13 with root, 12 without). */
static hs_status_t parse_row(const tokens_t *tok, int ncol, const char *file, int32_t line,
                             hs_nt_row_t *r, hs_error_t *err)
{
  const char *const *cols = ncol == 13 ? col_names_root : col_names_old;
  if (tok->n != ncol || tok->more)
    return hs_error_set(err, HS_EPARSE,
                        "%s:%d: expected a row of %d columns (size count type redop%s time algbw "
                        "busbw #wrong, out-of-place then in-place), got %d%s",
                        file, line, ncol, ncol == 13 ? " root" : "", tok->n, tok->more ? "+" : "");
  memset(r, 0, sizeof *r);
  r->line = line;
  int64_t v = 0;
  if (!parse_i64(tok->t[0], &v) || v < 0 || v > (INT64_C(1) << 50))
    return hs_error_set(err, HS_EPARSE, "%s:%d: column 1 (size, bytes): expected an integer in "
                        "[0, 2^50], got \"%s\"", file, line, tok->t[0]);
  r->size_bytes = (double)v;
  if (!parse_i64(tok->t[1], &r->count) || r->count < 0 || r->count > (INT64_C(1) << 50))
    return hs_error_set(err, HS_EPARSE, "%s:%d: column 2 (count, elements): expected an integer "
                        ">= 0, got \"%s\"", file, line, tok->t[1]);
  if (word_size(tok->t[2]) == 0)
    return hs_error_set(err, HS_EPARSE, "%s:%d: column 3 (type): unknown data type \"%s\"", file,
                        line, tok->t[2]);
  hs_strlcpy(r->type, tok->t[2], sizeof r->type);
  hs_strlcpy(r->redop, tok->t[3], sizeof r->redop);
  int c = 4;
  r->root = -1;
  if (ncol == 13) {
    int64_t root = 0;
    if (!parse_i64(tok->t[4], &root) || root < -1 || root >= MAX_RANKS)
      return hs_error_set(err, HS_EPARSE, "%s:%d: column 5 (root): expected an integer >= -1, "
                          "got \"%s\"", file, line, tok->t[4]);
    r->root = (int32_t)root;
    c = 5;
  }
  for (int k = 0; k < 2; k++, c += 4) {
    double x = 0;
    if (!parse_num(tok->t[c], &x, NULL) || !(x > 0) || !isnormal(x) || x > 1e12)
      return hs_error_set(err, HS_EPARSE, "%s:%d: column %d (%s %s, us): expected a positive "
                          "number, got \"%s\"", file, line, c + 1,
                          k ? "in-place" : "out-of-place", cols[c], tok->t[c]);
    r->time_us[k] = x;
    for (int q = 1; q <= 2; q++) {
      if (!parse_num(tok->t[c + q], &x, NULL) || x < 0 || (x != 0 && !isnormal(x)) || x > 1e9)
        return hs_error_set(err, HS_EPARSE, "%s:%d: column %d (%s %s, GB/s): expected a number "
                            ">= 0, got \"%s\"", file, line, c + q + 1,
                            k ? "in-place" : "out-of-place", cols[c + q], tok->t[c + q]);
      if (q == 1)
        r->algbw_GBps[k] = x;
      else
        r->busbw_GBps[k] = x;
    }
    const char *w = tok->t[c + 3];
    if (strcmp(w, "N/A") == 0) {
      r->wrong[k] = -1;
    } else if (parse_num(w, &x, NULL) && x >= 0 && x < 9e18) {
      r->wrong[k] = (int64_t)x;
    } else {
      return hs_error_set(err, HS_EPARSE, "%s:%d: column %d (%s %s): expected a count or N/A, "
                          "got \"%s\"", file, line, c + 4, k ? "in-place" : "out-of-place",
                          cols[c + 3], w);
    }
  }
  return HS_OK;
}

/* The collective named by the file's base name, if any. */
static int coll_from_name(const char *file)
{
  char a[256];
  squash(hs_basename(file), a, sizeof a);
  static const struct { const char *key; hs_nt_coll_t c; } k[] = {
      {"allreduce", HS_NT_ALL_REDUCE}, {"allgather", HS_NT_ALL_GATHER},
      {"reducescatter", HS_NT_REDUCE_SCATTER}, {"alltoall", HS_NT_ALLTOALL},
      {"sendrecv", HS_NT_SENDRECV}};
  for (size_t i = 0; i < HS_ARRAY_LEN(k); i++)
    if (strstr(a, k[i].key))
      return (int)k[i].c;
  return -1;
}

/* The rank lines of the header: how many, the highest rank, the distinct
 * hosts. */
typedef struct ranks {
  host_t *hosts; /* owned */
  size_t host_cap;
  int32_t n_hosts, rank_lines, max_rank;
} ranks_t;

/* One "#  Rank r ... on HOST device d [bus] NAME" line into R, and the
 * first device name into out->gpu_name. O(hosts). */
static hs_status_t rank_line(const tokens_t *tok, const char *b, const char *e, const char *file,
                             int32_t line, ranks_t *R, hs_nccl_tests_t *out, hs_error_t *err)
{
  /* #  Rank  r [Group g] Pid p on HOST device d [bus] NAME... */
  int64_t r = -1;
  int i;
  if (tok->n < 3 || !parse_i64(tok->t[2], &r) || r < 0 || r >= MAX_RANKS)
    return hs_error_set(err, HS_EPARSE, "%s:%d: rank line: expected a rank number after "
                        "\"Rank\"", file, line);
  const char *host = NULL;
  for (i = 3; i + 1 < tok->n; i++)
    if (strcmp(tok->t[i], "on") == 0) {
      host = tok->t[i + 1];
      break;
    }
  if (!host)
    return hs_error_set(err, HS_EPARSE, "%s:%d: rank line: expected \"on HOST\"", file, line);
  R->rank_lines++;
  R->max_rank = HS_MAX(R->max_rank, (int32_t)r);
  bool seen = false;
  for (int32_t h = 0; h < R->n_hosts && !seen; h++)
    seen = strncmp(R->hosts[h].name, host, sizeof R->hosts[h].name - 1) == 0;
  if (!seen) {
    if (hs_reserve((void **)&R->hosts, &R->host_cap, (size_t)R->n_hosts + 1,
                   sizeof *R->hosts) != HS_OK)
      return hs_error_set(err, HS_ENOMEM, "out of memory");
    hs_strlcpy(R->hosts[R->n_hosts++].name, host, sizeof R->hosts[0].name);
  }
  /* the device name follows the bus id "[...]" */
  const char *rb = memchr(b, ']', (size_t)(e - b));
  const char *lb = memchr(b, '[', (size_t)(e - b));
  if (rb && lb && lb < rb && out->gpu_name[0] == '\0') {
    const char *p = rb + 1;
    while (p < e && (*p == ' ' || *p == '\t'))
      p++;
    const char *q = e;
    while (q > p && (q[-1] == ' ' || q[-1] == '\r' || q[-1] == '\t'))
      q--;
    size_t len = (size_t)(q - p) < sizeof out->gpu_name - 1 ? (size_t)(q - p)
                                                           : sizeof out->gpu_name - 1;
    memcpy(out->gpu_name, p, len);
    out->gpu_name[len] = '\0';
  }
  return HS_OK;
}

/* Consistency: every row's busbw = algbw x the collective's factor for
 * its ranks (rounding of both to 0.01), which checks the collective and
 * the rank count. O(rows). */
static hs_status_t check_busbw(const hs_nccl_tests_t *out, const char *file, hs_error_t *err)
{
  double f = hs_nt_busbw_factor(out->coll, out->nranks);
  for (int32_t i = 0; i < out->n_rows; i++) {
    const hs_nt_row_t *r = &out->rows[i];
    for (int k = 0; k < 2; k++) {
      double want = r->algbw_GBps[k] * f;
      if (fabs(r->busbw_GBps[k] - want) > 0.005 + 0.005 * f + 1e-9)
        return hs_error_set(err, HS_EINVAL, "%s:%d: %s busbw %.2f GB/s is not algbw %.2f x %.4g "
                            "(%s with %d ranks): wrong --coll or --ranks?", file, r->line,
                            k ? "in-place" : "out-of-place", r->busbw_GBps[k], r->algbw_GBps[k],
                            f, hs_nt_coll_name(out->coll), out->nranks);
    }
  }
  return HS_OK;
}

/* The collective (--coll, else the file name, else the largest row's size
 * over count: all_reduce, sendrecv or reduce_scatter) into out->coll, and
 * the rank count when *nranks (from the header or --ranks) is 0: from the
 * same ratio, from busbw / algbw of an all_reduce, or 2 for sendrecv.
 * HS_EINVAL naming what the file does not say. */
static hs_status_t infer_coll_ranks(hs_nccl_tests_t *out, const hs_nt_opts_t *o, const char *file,
                                    int32_t *nranks, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  /* collective: option, file name, then the table */
  int coll = o ? o->coll : -1;
  if (coll < 0)
    coll = coll_from_name(file);
  const hs_nt_row_t *big = &out->rows[0];
  for (int32_t i = 1; i < out->n_rows; i++)
    if (out->rows[i].size_bytes > big->size_bytes)
      big = &out->rows[i];
  double per = big->count > 0 ? big->size_bytes / ((double)big->count * word_size(big->type)) : 0;
  bool none = strcmp(big->redop, "none") == 0;
  if (coll < 0 && big->count > 0) {
    if (per == 1.0)
      coll = none ? (int)HS_NT_SENDRECV : (int)HS_NT_ALL_REDUCE;
    else if (!none)
      coll = HS_NT_REDUCE_SCATTER;
  }
  if (coll < 0)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: cannot tell all_gather from alltoall from the table "
                         "(redop none, size = count x ranks); name the file after the test or "
                         "give --coll", file));
  out->coll = (hs_nt_coll_t)coll;
  if (!*nranks) {
    if (per > 1.0 && per == floor(per) && per < MAX_RANKS) {
      *nranks = (int32_t)per;
    } else if (out->coll == HS_NT_ALL_REDUCE) {
      /* busbw / algbw = 2(n-1)/n: n = 2 / (2 - ratio), from the best-resolved row */
      const hs_nt_row_t *r = &out->rows[0];
      for (int32_t i = 1; i < out->n_rows; i++)
        if (out->rows[i].algbw_GBps[0] > r->algbw_GBps[0])
          r = &out->rows[i];
      double ratio = r->algbw_GBps[0] > 0 ? r->busbw_GBps[0] / r->algbw_GBps[0] : 0;
      if (ratio >= 1.0 && ratio < 2.0)
        *nranks = (int32_t)lround(2.0 / (2.0 - ratio));
    } else if (out->coll == HS_NT_SENDRECV) {
      *nranks = 2; /* busbw = algbw whatever the count: the smallest group */
    }
  }
  if (*nranks < 2) {
    char facts[256];
    hs__nt_missing_facts(out, o, true, facts, sizeof facts);
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: the header does not say %s (no complete rank lines)",
                         file, facts));
  }
cleanup:
  return st;
}

hs_status_t hs_nccl_tests_parse(const char *text, const char *file, const hs_nt_opts_t *o,
                                hs_nccl_tests_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  size_t cap = 0;
  ranks_t R = {.max_rank = -1};
  bool elided = false;         /* a "..." line among the rank lines */
  int ncol = 0;                /* 0 until the table header */
  int32_t header_line = 0, algo_line = 0;
  int file_algo = HS_NT_ALGO_DEFAULT;
  tokens_t *tok = NULL;
  hs_nccl_tests_init(out);
  if (!file)
    file = "nccl-tests output";
  hs_strlcpy(out->file, file, sizeof out->file);
  tok = hs_calloc(1, sizeof *tok);
  if (!tok)
    HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
  int32_t line = 0;
  for (const char *s = text; *s;) {
    const char *e = strchr(s, '\n');
    if (!e)
      e = s + strlen(s);
    line++;
    const char *b = skip_prefix(s, e);
    split(b, e, tok);
    const char *next = *e ? e + 1 : e;
    HS_CHECK(note_algo(b, e, file, line, &file_algo, &algo_line, err));
    if (tok->n == 0) {
      s = next;
      continue;
    }
    if (strcmp(tok->t[0], "...") == 0 && ncol == 0) {
      elided = true;
    } else if (strcmp(tok->t[0], "#") == 0 && tok->n >= 2 && strcmp(tok->t[1], "Rank") == 0) {
      HS_CHECK(rank_line(tok, b, e, file, line, &R, out, err));
    } else if (strcmp(tok->t[0], "#") == 0 && tok->n >= 5 && strcmp(tok->t[1], "size") == 0 &&
               strcmp(tok->t[2], "count") == 0) {
      bool root = false;
      for (int i = 3; i < tok->n; i++)
        root |= strcmp(tok->t[i], "root") == 0;
      if (ncol == 0) {
        ncol = root ? 13 : 12;
        header_line = line;
      }
    } else if (ncol && isdigit((unsigned char)tok->t[0][0]) && !strchr(tok->t[0], ':')) {
      /* a data row starts with the size, an integer; NCCL INFO lines start
       * with "host:pid:tid". A row whose size does not parse ("1024x",
       * past 2^50) is refused by parse_row, naming the line, instead of
       * dropping out of the fit unnoticed. */
      if (out->n_rows >= MAX_ROWS)
        HS_FAIL(hs_error_set(err, HS_ELIMIT, "%s:%d: more than %d rows", file, line, MAX_ROWS));
      hs_nt_row_t r;
      HS_CHECK(parse_row(tok, ncol, file, line, &r, err));
      if (add_row(out, &cap, &r) != HS_OK)
        HS_FAIL(hs_error_set(err, HS_ENOMEM, "out of memory"));
    }
    s = next;
  }
  if (!ncol)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s: no nccl-tests table header (\"#  size  count  type "
                         "redop  root  time  algbw  busbw ...\") in %d lines", file, line));
  if (out->n_rows == 0)
    HS_FAIL(hs_error_set(err, HS_EPARSE, "%s:%d: table header but no rows after it (file "
                         "truncated?)", file, header_line));
  /* ranks */
  int32_t nranks = 0;
  if (R.rank_lines > 0 && !elided && R.rank_lines == R.max_rank + 1) {
    nranks = R.rank_lines;
    out->n_nodes = R.n_hosts;
    if (R.n_hosts > 0 && nranks % R.n_hosts == 0)
      out->gpus_per_node = nranks / R.n_hosts;
  }
  if (o && o->nranks > 0) {
    if (nranks && nranks != o->nranks)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: --ranks %d, but the header lists %d ranks", file,
                           o->nranks, nranks));
    nranks = o->nranks;
  }
  if (o && o->gpus_per_node > 0) {
    if (out->gpus_per_node && out->gpus_per_node != o->gpus_per_node)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: --gpus-per-node %d, but the header puts %d ranks "
                           "on each of %d hosts", file, o->gpus_per_node, out->gpus_per_node,
                           out->n_nodes));
    out->gpus_per_node = o->gpus_per_node;
  }
  HS_CHECK(infer_coll_ranks(out, o, file, &nranks, err));
  /* algorithm: --algo, else the file's NCCL_ALGO; both must agree */
  out->algo = file_algo;
  if (o && o->algo != HS_NT_ALGO_DEFAULT && file_algo != HS_NT_ALGO_DEFAULT && file_algo != o->algo)
    HS_FAIL(hs_error_set(err, HS_EINVAL, "%s:%d: --algo %s, but the file ran NCCL_ALGO %s", file,
                         algo_line, hs_nt_algo_name(o->algo), hs_nt_algo_name(file_algo)));
  if (o && o->algo != HS_NT_ALGO_DEFAULT)
    out->algo = o->algo;
  out->nranks = nranks;
  if (out->gpus_per_node > 0 && !out->n_nodes) {
    if (nranks % out->gpus_per_node)
      HS_FAIL(hs_error_set(err, HS_EINVAL, "%s: %d ranks are not a multiple of %d GPUs per node",
                           file, nranks, out->gpus_per_node));
    out->n_nodes = nranks / out->gpus_per_node;
  }
  HS_CHECK(check_busbw(out, file, err));
cleanup:
  free(tok);
  free(R.hosts);
  if (st != HS_OK)
    hs_nccl_tests_destroy(out);
  return st;
}

hs_status_t hs_nccl_tests_load(const char *path, const hs_nt_opts_t *o, hs_nccl_tests_t *out,
                               hs_error_t *err)
{
  char *text = NULL;
  hs_nccl_tests_init(out);
  hs_status_t st = hs_file_read(path, (size_t)64 << 20, &text, NULL, err);
  if (st == HS_OK)
    st = hs_nccl_tests_parse(text, hs_basename(path), o, out, err);
  free(text);
  return st;
}
