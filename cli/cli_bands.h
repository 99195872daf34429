/*
 * cli_bands.h - the error band of a predicted iteration and the verdict on
 * a ranking, for compare, plan and whatif (cli/bands.c; hs_bands.h,
 * docs/validation.md "Error bands").
 */
#ifndef HS_CLI_BANDS_H
#define HS_CLI_BANDS_H

#include "hs_bands.h"
#include "hs_export.h"

/* The verdict on the fastest of a list of options. */
typedef struct hs_cli_ranking {
  int winner, next;          /* indices, -1 none */
  double margin;             /* next time / winner time - 1 */
  double band;               /* the larger of the two options' bands; NAN unknown */
  bool reliable;             /* margin > band */
  char basis[200];           /* the winner's band basis and row count */
} hs_cli_ranking_t;

/* Loads $HETSIM_DATA/validate/error-bands.json into b; false (b empty)
 * when it is missing or bad: the ranking then says the band is unknown. */
bool hs_cli_bands_load(hs_bands_t *b);
/* Sets each ok row's error_band and the fastest row's lead (rows of
 * `hetsim compare`), and fills *out. O(rows x band rows log band rows). */
void hs_cli_rank_compare(const hs_bands_t *b, hs_compare_row_t *rows, size_t n, hs_cli_ranking_t *out);
/* The verdict line, e.g. "ranking: hapt leads megatron by 2.1%, inside the
 * 8.3% error band (...): not a reliable difference". */
void hs_cli_ranking_text(const hs_cli_ranking_t *r, const char *winner, const char *next, char *buf,
                         size_t n);

#endif /* HS_CLI_BANDS_H */
