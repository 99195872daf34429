/*
 * hs_ranking.h - the error band of a predicted iteration and the verdict on
 * a ranking, for compare, plan and whatif (notebooks-export/ranking.c; hs_bands.h,
 * docs/validation.md "Error bands").
 */
#ifndef HS_RANKING_H
#define HS_RANKING_H

#include "hs_bands.h"
#include "hs_export.h"

/* The verdict on the fastest of a list of options. */
typedef struct hs_ranking {
  int winner, next;          /* indices, -1 none */
  double margin;             /* next time / winner time - 1 */
  double band;               /* the larger of the two options' bands; NAN unknown */
  bool reliable;             /* margin > band */
  char basis[200];           /* the winner's band basis and row count */
} hs_ranking_t;

/* Loads $HETSIM_DATA/validate/error-bands.json into b; false (b empty)
 * when it is missing or bad: the ranking then says the band is unknown. */
bool hs_rank_bands_load(hs_bands_t *b);
/* Sets each ok row's error_band and the fastest row's lead (rows of
 * `hetsim compare`), and fills *out. O(rows x band rows log band rows). */
void hs_rank_compare(const hs_bands_t *b, hs_compare_row_t *rows, size_t n, hs_ranking_t *out);
/* The verdict line, e.g. "ranking: hapt leads megatron by 2.1%, inside the
 * 8.3% error band (...): not a reliable difference". */
void hs_ranking_text(const hs_ranking_t *r, const char *winner, const char *next, char *buf,
                         size_t n);

/* Loads the bands and ranks the compare rows (hs_rank_compare): what
 * `hetsim compare` and hs_api_compare_csv both do before writing. */
void hs_rank_compare_rows(hs_compare_row_t *rows, size_t n, hs_ranking_t *out);
/* The error band of a plan's predicted iteration: its GPU class, framework
 * preset and GPU count (hs_bands_lookup); n_rows 0 when unknown. */
void hs_rank_plan_band(const hs_plan_t *p, const hs_cluster_t *c, hs_band_t *out);
/* The verdict on a what-if's ranking into res->ranking_* (the best
 * option's tokens/s lead over the next against the bands; an option's
 * class is its GPU type, "heterogeneous" when it mixes types). */
void hs_whatif_rank(hs_whatif_result_t *res, hs_framework_id_t framework);

#endif /* HS_RANKING_H */
