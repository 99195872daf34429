/*
 * json_common.c - what the hetsim model loader and the HuggingFace config
 * loader share: parsing text into a document, naming a model after its file,
 * and keeping every loader message on one line.
 */
#include "json_common.h"
#include "hs_json.h"

#include <string.h>

void hs__error_one_line(hs_error_t *err)
{
  if (!err)
    return;
  for (char *p = err->msg; *p; p++)
    if ((unsigned char)*p < 0x20 || *p == 0x7f)
      *p = ' ';
}

void hs__model_name_from_path(const char *path, char *buf, size_t n)
{
  const char *base = hs_basename(path);
  if (strcmp(base, "config.json") == 0 && base > path) {
    /* ".../NAME/config.json" -> NAME */
    const char *end = base - 1; /* the '/' */
    const char *start = end;
    while (start > path && start[-1] != '/')
      start--;
    size_t len = (size_t)(end - start);
    if (len > 0) {
      if (len >= n)
        len = n - 1;
      memcpy(buf, start, len);
      buf[len] = '\0';
      return;
    }
  }
  hs_strlcpy(buf, base, n);
  size_t len = strlen(buf);
  if (len > 5 && strcmp(buf + len - 5, ".json") == 0)
    buf[len - 5] = '\0';
}

hs_status_t hs__model_parse_text(const char *text, const char *file, const char *default_file,
                                 int64_t seq_len_override, hs__model_json_loader_t load,
                                 hs_model_t *out, hs_error_t *err)
{
  hs_status_t st = HS_OK;
  struct cJSON *root = NULL;
  char name[64];
  hs_model_init(out);
  if (!file)
    file = default_file;
  if (!text)
    return hs_error_set(err, HS_EINVAL, "%s: no text to parse", file);
  hs__model_name_from_path(file, name, sizeof name);
  HS_CHECK(hs_json_parse(text, file, &root, err));
  HS_CHECK(load(root, file, name, seq_len_override, out, err));
cleanup:
  hs_json_free(root);
  if (st != HS_OK)
    hs__error_one_line(err);
  return st;
}
