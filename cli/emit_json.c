/*
 * emit_json.c - the one way a command writes its JSON result: to the -o
 * file, to stdout (--json), or both, and then frees it.
 */
#include "cli.h"

#include "hs_json.h"
#include "hs_sim.h"

hs_status_t hs_cli_emit_json(struct cJSON *j, const char *path, bool to_stdout, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  j = hs_json_stamp_version(j, HS_SCHEMA_VERSION);
  if (!j)
    return hs_error_set(err, HS_ENOMEM, "out of memory");
  if (path)
    st = hs_json_write_file(j, path, err);
  if (st == HS_OK && to_stdout)
    st = hs_json_write_file(j, "-", err);
  hs_json_free(j);
  return st;
}
