/*
 * bands.c - error bands for compare, plan and whatif (cli_bands.h). The
 * bands come from validate/error-bands.json (`hetsim validate --published
 * --bands-out`), never from rerunning the suite.
 */
#include "cli_bands.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

bool hs_cli_bands_load(hs_bands_t *b)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/validate/error-bands.json", hs_data_dir());
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  return hs_bands_load(path, b, &err) == HS_OK && b->n_rows > 0;
}

void hs_cli_rank_compare(const hs_bands_t *b, hs_compare_row_t *rows, size_t n, hs_cli_ranking_t *out)
{
  memset(out, 0, sizeof *out);
  out->winner = out->next = -1;
  out->band = NAN;
  for (size_t i = 0; i < n; i++) {
    hs_compare_row_t *r = &rows[i];
    r->lead = 0;
    if (!r->ok)
      continue;
    hs_band_t band;
    hs_bands_lookup(b, r->gpu_class, r->framework, r->gpus_used, &band);
    r->band_set = band.n_rows > 0;
    r->error_band = band.rel;
    if (out->winner < 0 || r->iter_s < rows[out->winner].iter_s) {
      out->next = out->winner;
      out->winner = (int)i;
    } else if (out->next < 0 || r->iter_s < rows[out->next].iter_s) {
      out->next = (int)i;
    }
  }
  if (out->winner < 0 || out->next < 0)
    return;
  const hs_compare_row_t *w = &rows[out->winner], *x = &rows[out->next];
  out->margin = x->iter_s / w->iter_s - 1.0;
  if (!w->band_set || !x->band_set)
    return;
  out->band = fmax(w->error_band, x->error_band);
  out->reliable = hs_band_reliable(w->iter_s, x->iter_s, out->band);
  rows[out->winner].lead = out->reliable ? 1 : -1;
  hs_band_t wb;
  hs_bands_lookup(b, w->gpu_class, w->framework, w->gpus_used, &wb);
  snprintf(out->basis, sizeof out->basis, "%s, %d published rows", wb.basis, wb.n_rows);
}

void hs_cli_ranking_text(const hs_cli_ranking_t *r, const char *winner, const char *next, char *buf,
                         size_t n)
{
  if (r->winner < 0 || r->next < 0)
    snprintf(buf, n, "ranking: fewer than two options planned");
  else if (!isfinite(r->band))
    snprintf(buf, n, "ranking: %s leads %s by %.1f%%; error band unknown (no "
             "validate/error-bands.json: hetsim validate --published --bands-out)",
             winner, next, r->margin * 100.0);
  else
    snprintf(buf, n, "ranking: %s leads %s by %.1f%%, %s the %.1f%% error band (90th percentile of "
             "|error|, %s)%s",
             winner, next, r->margin * 100.0, r->reliable ? "outside" : "inside", r->band * 100.0,
             r->basis, r->reliable ? "" : ": not a reliable difference");
}
