/*
 * test_output.c - hs_output (common/hs_output.h): a file output is written
 * whole through a temporary and rename, or the target stays as it was.
 * Each case sets up the target in a fresh directory and checks the result
 * against what the test wrote itself: the bytes, the mode, the kind of file
 * and the directory's entries (no temporary left behind).
 */
/* mkdtemp, mkfifo, symlink, lstat, setrlimit */
#define _XOPEN_SOURCE 700

#include "hs_output.h"
#include "hs_test.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

static char dir[256];

static const char *at(const char *name)
{
  static char buf[2][512];
  static int k;
  k ^= 1;
  snprintf(buf[k], sizeof buf[k], "%s/%s", dir, name);
  return buf[k];
}

static void put(const char *path, const char *text)
{
  FILE *f = fopen(path, "w");
  CHECK(f != NULL);
  if (f) {
    fputs(text, f);
    fclose(f);
  }
}

/* The file's bytes equal `text`. */
static bool same(const char *path, const char *text)
{
  char *t = NULL;
  hs_error_t err;
  hs_error_init(&err);
  if (hs_file_read(path, 1 << 20, &t, NULL, &err) != HS_OK)
    return false;
  bool eq = strcmp(t, text) == 0;
  free(t);
  return eq;
}

/* Entries of the test directory, "." and ".." aside. */
static int n_entries(void)
{
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));)
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  if (d)
    closedir(d);
  return n;
}

static void empty_dir(void)
{
  DIR *d = opendir(dir);
  for (struct dirent *e; d && (e = readdir(d));)
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) {
      const char *p = at(e->d_name);
      chmod(p, 0700);
      if (unlink(p) != 0)
        rmdir(p);
    }
  if (d)
    closedir(d);
}

static void test_new_file(void)
{
  empty_dir();
  hs_error_t err;
  hs_error_init(&err);
  hs_output_t o;
  CHECK(hs_output_open(&o, at("new.json"), &err) == HS_OK);
  /* the temporary sits beside the target, the target does not exist yet */
  CHECK(o.tmp && strncmp(o.tmp, dir, strlen(dir)) == 0 && strchr(o.tmp + strlen(dir) + 1, '/') == NULL);
  CHECK(access(at("new.json"), F_OK) != 0);
  fputs("hello\n", o.f);
  CHECK_MSG(hs_output_commit(&o, &err) == HS_OK, "%s", err.msg);
  CHECK(same(at("new.json"), "hello\n"));
  struct stat sb;
  CHECK(stat(at("new.json"), &sb) == 0 && (sb.st_mode & 0777) == 0644); /* 0666 less umask 022 */
  CHECK_EQ_INT(n_entries(), 1);
  CHECK(o.f == NULL && o.tmp == NULL && o.path == NULL);
  hs_output_abort(&o); /* after commit: a no-op */
  CHECK(same(at("new.json"), "hello\n"));
}

static void test_replace_keeps_mode(void)
{
  empty_dir();
  put(at("r.csv"), "old contents, longer than the new\n");
  chmod(at("r.csv"), 0640);
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_output_write_text(at("r.csv"), "new\n", &err) == HS_OK);
  CHECK(same(at("r.csv"), "new\n"));
  struct stat sb;
  CHECK(stat(at("r.csv"), &sb) == 0 && (sb.st_mode & 07777) == 0640);
  CHECK_EQ_INT(n_entries(), 1);
}

/* Each refused target is left exactly as it was and no temporary remains. */
static void test_refusals(void)
{
  empty_dir();
  put(at("victim"), "victim\n");
  CHECK(symlink("victim", at("link")) == 0);
  CHECK(mkfifo(at("fifo"), 0644) == 0);
  CHECK(mkdir(at("sub"), 0755) == 0);
  put(at("ro"), "read-only\n");
  chmod(at("ro"), 0444);
  struct {
    const char *name, *needle;
  } cases[] = {
      {"link", "symbolic link"},
      {"fifo", "a FIFO"},
      {"sub", "a directory"},
      {"ro", "read-only (mode 0444)"},
  };
  for (size_t k = 0; k < HS_ARRAY_LEN(cases); k++) {
    hs_error_t err;
    hs_error_init(&err);
    hs_output_t o;
    CHECK(hs_output_open(&o, at(cases[k].name), &err) == HS_EINVAL);
    CHECK(o.f == NULL && o.tmp == NULL);
    CHECK_CONTAINS(err.msg, cases[k].name);
    CHECK_CONTAINS(err.msg, cases[k].needle);
    hs_error_init(&err);
    CHECK(hs_output_write_text(at(cases[k].name), "x\n", &err) == HS_EINVAL);
    hs_error_init(&err);
    CHECK(hs_output_check(at(cases[k].name), &err) == HS_EINVAL);
    FILE *f = NULL;
    hs_error_init(&err);
    CHECK(hs_output_open_append(at(cases[k].name), &f, &err) != HS_OK && f == NULL);
    CHECK_CONTAINS(err.msg, cases[k].name);
  }
  struct stat sb;
  CHECK(lstat(at("link"), &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK(lstat(at("fifo"), &sb) == 0 && S_ISFIFO(sb.st_mode));
  CHECK(lstat(at("sub"), &sb) == 0 && S_ISDIR(sb.st_mode));
  CHECK(same(at("victim"), "victim\n"));
  CHECK(same(at("ro"), "read-only\n"));
  CHECK(lstat(at("ro"), &sb) == 0 && (sb.st_mode & 07777) == 0444);
  CHECK_EQ_INT(n_entries(), 5);
  /* device nodes: checked only (never opened for output in a test) */
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_output_check("/dev/null", &err) == HS_EINVAL);
  CHECK_CONTAINS(err.msg, "/dev/null: is a character device");
  hs_error_init(&err);
  CHECK(hs_output_check("-", &err) == HS_OK);
  hs_error_init(&err);
  CHECK(hs_output_check("", &err) == HS_EINVAL);
}

/* The old code wrote PATH.tmp: a file planted under that name (a symbolic
 * link to a victim) is neither followed nor removed. */
static void test_planted_tmp(void)
{
  empty_dir();
  put(at("victim"), "victim\n");
  CHECK(symlink("victim", at("out.csv.tmp")) == 0);
  hs_error_t err;
  hs_error_init(&err);
  CHECK(hs_output_write_text(at("out.csv"), "rows\n", &err) == HS_OK);
  CHECK(same(at("out.csv"), "rows\n"));
  CHECK(same(at("victim"), "victim\n"));
  struct stat sb;
  CHECK(lstat(at("out.csv.tmp"), &sb) == 0 && S_ISLNK(sb.st_mode));
  CHECK_EQ_INT(n_entries(), 3);
}

static void test_abort(void)
{
  empty_dir();
  put(at("keep.json"), "before\n");
  hs_error_t err;
  hs_error_init(&err);
  hs_output_t o;
  CHECK(hs_output_open(&o, at("keep.json"), &err) == HS_OK);
  fputs("half a docu", o.f);
  CHECK_EQ_INT(n_entries(), 2);
  hs_output_abort(&o);
  CHECK(same(at("keep.json"), "before\n"));
  CHECK_EQ_INT(n_entries(), 1);
  hs_output_abort(&o); /* twice: a no-op */
  hs_output_t z;
  hs_output_init(&z);
  hs_output_abort(&z);
  hs_output_abort(NULL);
}

/* A write past RLIMIT_FSIZE fails (EFBIG, SIGXFSZ ignored as cli/main.c
 * does): commit says so, the old file stays, the temporary goes. */
static void test_write_error(void)
{
  empty_dir();
  put(at("big.json"), "old\n");
  struct rlimit old, lim;
  CHECK(getrlimit(RLIMIT_FSIZE, &old) == 0);
  lim = old;
  lim.rlim_cur = 100;
  void (*prev)(int) = signal(SIGXFSZ, SIG_IGN);
  CHECK(setrlimit(RLIMIT_FSIZE, &lim) == 0);
  hs_error_t err;
  hs_error_init(&err);
  hs_output_t o;
  CHECK(hs_output_open(&o, at("big.json"), &err) == HS_OK);
  for (int i = 0; i < 1000; i++)
    fputs("0123456789", o.f);
  CHECK(hs_output_commit(&o, &err) == HS_EIO);
  CHECK(setrlimit(RLIMIT_FSIZE, &old) == 0);
  signal(SIGXFSZ, prev);
  CHECK_CONTAINS(err.msg, "big.json: write error: File too large");
  CHECK(same(at("big.json"), "old\n"));
  CHECK_EQ_INT(n_entries(), 1);
}

static void test_missing_dir(void)
{
  empty_dir();
  hs_error_t err;
  hs_error_init(&err);
  hs_output_t o;
  CHECK(hs_output_open(&o, at("nodir/x.json"), &err) == HS_EIO);
  CHECK_CONTAINS(err.msg, "nodir/x.json: cannot create a temporary file beside it");
  CHECK(o.f == NULL);
  CHECK_EQ_INT(n_entries(), 0);
}

static void test_stdout_and_append(void)
{
  empty_dir();
  hs_error_t err;
  hs_error_init(&err);
  hs_output_t o;
  CHECK(hs_output_open(&o, "-", &err) == HS_OK);
  CHECK(o.f == stdout && o.tmp == NULL);
  CHECK(hs_output_commit(&o, &err) == HS_OK);
  CHECK(o.f == NULL);
  CHECK_EQ_INT(n_entries(), 0);

  put(at("rows.csv"), "a\n");
  FILE *f = NULL;
  CHECK(hs_output_open_append(at("rows.csv"), &f, &err) == HS_OK && f != NULL);
  if (f) {
    fputs("b\n", f);
    CHECK(fclose(f) == 0);
  }
  CHECK(same(at("rows.csv"), "a\nb\n"));
  CHECK(hs_output_open_append(at("none.csv"), &f, &err) == HS_EIO && f == NULL);
}

int main(void)
{
  umask(022);
  snprintf(dir, sizeof dir, "%s/hs_output_XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
  if (!mkdtemp(dir)) {
    perror("mkdtemp");
    return 1;
  }
  HS_RUN(test_new_file);
  HS_RUN(test_replace_keeps_mode);
  HS_RUN(test_refusals);
  HS_RUN(test_planted_tmp);
  HS_RUN(test_abort);
  HS_RUN(test_write_error);
  HS_RUN(test_missing_dir);
  HS_RUN(test_stdout_and_append);
  empty_dir();
  rmdir(dir);
  HS_TEST_END();
}
