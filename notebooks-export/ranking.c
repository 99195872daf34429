/*
 * ranking.c - error bands for compare, plan and whatif (hs_ranking.h), shared
 * by the CLI and libhetsim (capi) so that both print the same. The
 * bands come from validate/error-bands.json (`hetsim validate --published
 * --bands-out`), never from rerunning the suite.
 */
#include "hs_ranking.h"

#include <math.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

bool hs_rank_bands_load(hs_bands_t *b)
{
  char path[1024];
  snprintf(path, sizeof path, "%s/validate/error-bands.json", hs_data_dir());
  hs_error_t err;
  hs_error_init(&err);
  err.warn_fp = NULL;
  return hs_bands_load(path, b, &err) == HS_OK && b->n_rows > 0;
}

void hs_rank_compare(const hs_bands_t *b, hs_compare_row_t *rows, size_t n, hs_ranking_t *out)
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

void hs_ranking_text(const hs_ranking_t *r, const char *winner, const char *next, char *buf,
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

void hs_rank_compare_rows(hs_compare_row_t *rows, size_t n, hs_ranking_t *out)
{
  hs_bands_t bands;
  hs_bands_init(&bands);
  (void)hs_rank_bands_load(&bands);
  hs_rank_compare(&bands, rows, n, out);
  hs_bands_destroy(&bands);
}

/* The error band of the plan's predicted iteration (hs_bands.h): its GPU
 * class, framework preset and GPU count; n_rows 0 when unknown. */
void hs_rank_plan_band(const hs_plan_t *p, const hs_cluster_t *c, hs_band_t *out)
{
  hs_bands_t bands;
  hs_bands_init(&bands);
  memset(out, 0, sizeof *out);
  out->rel = NAN;
  int32_t *devs = calloc(c->n_devices + 1, sizeof *devs), n = 0;
  if (devs && hs_rank_bands_load(&bands)) {
    for (int32_t i = 0; i < p->n_pipelines; i++)
      for (int32_t s = 0; s < p->pipelines[i].n_stages; s++)
        for (int32_t r = 0; r < p->pipelines[i].stages[s].n_replicas; r++)
          for (int32_t d = 0; d < p->pipelines[i].stages[s].replicas[r].n_devices && n < (int32_t)c->n_devices; d++)
            devs[n++] = p->pipelines[i].stages[s].replicas[r].devices[d];
    hs_bands_lookup(&bands, hs_band_gpu_class(c, devs, n), hs_framework_name(p->practice.framework.id),
                    hs_plan_n_devices(p), out);
  }
  free(devs);
  hs_bands_destroy(&bands);
}

/* The verdict on the ranking, into res (hs_whatif_result_t.ranking_*):
 * is the best option's tokens/s lead over the next outside the error
 * bands (hs_ranking.h)? An option's class is its GPU type,
 * "heterogeneous" when it mixes types. */
void hs_whatif_rank(hs_whatif_result_t *res, hs_framework_id_t framework)
{
  hs_bands_t bands;
  hs_bands_init(&bands);
  (void)hs_rank_bands_load(&bands);
  hs_compare_row_t rows[2];
  size_t idx[2] = {0, 0};
  int n = 0;
  memset(rows, 0, sizeof rows);
  for (size_t i = 0; i < res->n_rows && n < 2; i++) {
    const hs_whatif_row_t *w = &res->rows[i];
    if (!w->ok || !(w->best.tokens_per_s > 0.0))
      continue;
    idx[n] = i;
    hs_compare_row_t *r = &rows[n++];
    r->ok = true;
    hs_strlcpy(r->strategy, w->option, sizeof r->strategy);
    r->iter_s = 1.0 / w->best.tokens_per_s; /* options may train different batches */
    r->gpus_used = w->best.n_gpus_used;
    const char *colon = strchr(w->best.gpu_types, ':');
    if (colon && !strchr(w->best.gpu_types, ' '))
      snprintf(r->gpu_class, sizeof r->gpu_class, "%.*s", (int)(colon - w->best.gpu_types), w->best.gpu_types);
    else
      hs_strlcpy(r->gpu_class, "heterogeneous", sizeof r->gpu_class);
    hs_strlcpy(r->framework, hs_framework_name(framework), sizeof r->framework);
  }
  hs_ranking_t rk;
  hs_rank_compare(&bands, rows, (size_t)n, &rk);
  hs_ranking_text(&rk, rk.winner >= 0 ? rows[rk.winner].strategy : "",
                      rk.next >= 0 ? rows[rk.next].strategy : "", res->ranking_note,
                      sizeof res->ranking_note);
  res->ranking_set = rk.winner >= 0 && rk.next >= 0;
  if (res->ranking_set) {
    res->ranking_winner = idx[rk.winner];
    res->ranking_next = idx[rk.next];
    res->ranking_margin = rk.margin;
    res->ranking_band = rk.band;
    res->ranking_reliable = rk.reliable;
  }
  hs_bands_destroy(&bands);
}
