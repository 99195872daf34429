/*
 * json_common.h - what the two JSON model loaders share (hetsim model files
 * in model_json.c, HuggingFace configs in hf_json.c); internal to the models
 * module.
 */
#ifndef HS_MODELS_JSON_COMMON_H
#define HS_MODELS_JSON_COMMON_H

#include "models_internal.h"

/* A loader on an already parsed document: hs__model_from_hetsim_json or
 * hs__model_from_hf_json. */
typedef hs_status_t (*hs__model_json_loader_t)(const struct cJSON *root, const char *file,
                                               const char *default_name,
                                               int64_t seq_len_override, hs_model_t *out,
                                               hs_error_t *err);

/* Parses `text` and hands the document to `load`: the body of
 * hs_model_parse_json and hs_model_parse_hf_config. `file` names the text in
 * messages (`default_file` when NULL) and gives the model its default name.
 * Initialises *out and leaves it destroyed on failure; the message is one
 * line. O(length of text + size of the model). */
hs_status_t hs__model_parse_text(const char *text, const char *file, const char *default_file,
                                 int64_t seq_len_override, hs__model_json_loader_t load,
                                 hs_model_t *out, hs_error_t *err);

#endif /* HS_MODELS_JSON_COMMON_H */
