/*
 * models_internal.h - what the files of the models module share and nobody
 * else sees: the field names a transformer configuration is checked under
 * (so that a message names the field as the user wrote it: "transformer.heads"
 * in a hetsim file, "num_attention_heads" in a HuggingFace config) and the
 * checked generator entry point.
 */
#ifndef HS_MODELS_INTERNAL_H
#define HS_MODELS_INTERNAL_H

#include "hs_models.h"

struct cJSON;

/* How each generator field is called in the input being read; every member
 * is a full field path ("transformer.heads", "num_attention_heads"). */
typedef struct hs__cfg_fields {
  const char *layers, *hidden, *heads, *kv_heads, *head_dim, *ffn, *vocab, *seq_len,
      *max_positions, *type_vocab, *experts, *topk;
} hs__cfg_fields_t;

/* Field names of the public API ("layers", "hidden", ...). */
extern const hs__cfg_fields_t hs__cfg_fields_plain;

/* Checks cfg (ranges, limits, divisibility) and builds the op sequence into
 * *out (initialised here). Messages read "file: field: ...". O(layers). */
hs_status_t hs__transformer_build(const hs_transformer_cfg_t *cfg, const char *file,
                                  const hs__cfg_fields_t *fields, hs_model_t *out,
                                  hs_error_t *err);

/* True when a parsed file looks like a HuggingFace config (has
 * "architectures" or "model_type"). */
bool hs__hf_is_config(const struct cJSON *root);
/* The HF loader and the hetsim loader on an already parsed document. `file`
 * names the input in messages; `default_name` names the model when the file
 * does not. Both initialise *out and leave it destroyed on failure. */
hs_status_t hs__model_from_hf_json(const struct cJSON *root, const char *file,
                                   const char *default_name, int64_t seq_len_override,
                                   hs_model_t *out, hs_error_t *err);
hs_status_t hs__model_from_hetsim_json(const struct cJSON *root, const char *file,
                                       const char *default_name, int64_t seq_len_override,
                                       hs_model_t *out, hs_error_t *err);
/* Replaces line breaks and other control characters in a recorded message
 * by spaces, so that every loader message is one line (hs_json_parse quotes
 * the input near a syntax error, which may hold a newline). */
void hs__error_one_line(hs_error_t *err);
/* Model name from a file path: the parent folder for ".../NAME/config.json",
 * else the base name without ".json". */
void hs__model_name_from_path(const char *path, char *buf, size_t n);

/* Path of catalog entry `name` into buf: <data>/models/catalog/<name>.json.
 * False when it does not fit. */
bool hs__model_catalog_path(const char *name, char *buf, size_t n);

#endif /* HS_MODELS_INTERNAL_H */
