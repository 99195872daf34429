/*
 * hs_output.h - every file hetsim writes goes through here: an output is
 * whole or it is not there.
 *
 * hs_output_open(path) checks the target, then writes into a temporary file
 * that mkstemp(3) creates in the target's directory (an unpredictable name,
 * created with O_EXCL, so a planted file or symbolic link is never followed);
 * hs_output_commit() checks every write and the close, gives the temporary
 * the target's permission bits (an existing file's, or 0666 less the umask
 * for a new one) and rename(2)s it over the target. On any failure the
 * temporary is removed and the target is left as it was.
 *
 * Targets that are refused (HS_EINVAL, the message names the path and why):
 *   - anything but a regular file: directory, FIFO, device node, socket;
 *   - a symbolic link (even one naming a regular file): hetsim would replace
 *     the link itself, which is rarely what was meant; give the path it names;
 *   - a read-only file: no write bit set in its mode (checked from the mode
 *     bits, so root, who bypasses permissions, is refused too), or one this
 *     process may not write (access(2)).
 * The directory must be writable (the temporary lives there). A replaced
 * file keeps its mode but not its hard links or its owner.
 *
 * "-" means standard output: nothing is checked or renamed, commit flushes
 * and checks ferror; closing stdout is left to the program (cli/main.c).
 *
 * Write errors are HS_EIO and name the path and the reason (strerror), for
 * example "out.csv: write error: No space left on device".
 */
#ifndef HS_OUTPUT_H
#define HS_OUTPUT_H

#include "hs_common.h"

#include <stdio.h>

typedef struct hs_output {
  FILE *f;    /* write here between open and commit (stdout for "-") */
  char *path; /* the target, owned; NULL when not open */
  char *tmp;  /* the temporary file, owned; NULL for stdout */
  unsigned mode; /* permission bits the committed file gets */
} hs_output_t;

/* Zeroes o; hs_output_abort() on it is a no-op. */
void hs_output_init(hs_output_t *o);

/* Checks the target (see the file comment) and opens the temporary; on
 * HS_OK o->f is ready for writing. O(1) system calls. */
hs_status_t hs_output_open(hs_output_t *o, const char *path, hs_error_t *err);

/* Flushes, checks ferror and fclose, and renames the temporary over the
 * target (the target is checked once more just before). Always releases o:
 * on failure the temporary is removed and the target untouched. */
hs_status_t hs_output_commit(hs_output_t *o, hs_error_t *err);

/* Drops an open output: closes and removes the temporary, the target stays
 * as it was. No-op on an initialised, committed or aborted o. */
void hs_output_abort(hs_output_t *o);

/* The target checks alone: HS_OK when path ("-" included) could be
 * replaced or created. */
hs_status_t hs_output_check(const char *path, hs_error_t *err);

/* Flushes stdout; HS_EIO "standard output: write error: REASON" when that
 * or an earlier write to it failed (the reason when the flush tells it). */
hs_status_t hs_output_flush_stdout(hs_error_t *err);

/* open + fputs(text) + commit. */
hs_status_t hs_output_write_text(const char *path, const char *text, hs_error_t *err);

/* Opens an existing regular file for appending, refusing what
 * hs_output_open refuses (the link is not followed: O_NOFOLLOW). For outputs
 * written incrementally (sweep's rows, so an interrupted run keeps what it
 * finished); the caller checks its writes and fclose. */
hs_status_t hs_output_open_append(const char *path, FILE **f, hs_error_t *err);

#endif
