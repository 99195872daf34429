/*
 * whatif_output.c - a purchase study's result (hs_whatif_run) as the text
 * table or the CSV `hetsim whatif` prints; the JSON form is in
 * whatif_json.c. Entry point: hs_whatif_write.
 *
 * Invariants: the bytes are a function of the result only; infeasible rows
 * print their reason and never a throughput, MFU or cost; the CSV's columns
 * are those of docs/schemas.md ("What-if"), the same in every row.
 */
#include "hs_export.h"

#include <math.h>
#include <string.h>

hs_status_t hs_whatif_format_parse(const char *s, hs_whatif_format_t *out)
{
  if (!strcmp(s, "table"))
    *out = HS_WHATIF_TABLE;
  else if (!strcmp(s, "csv"))
    *out = HS_WHATIF_CSV;
  else if (!strcmp(s, "json"))
    *out = HS_WHATIF_JSON;
  else
    return HS_EINVAL;
  return HS_OK;
}

void hs_whatif_batch_note(const hs_whatif_result_t *r, char *buf, size_t n)
{
  if (r->global_batch_per_gpu > 0)
    snprintf(buf, n, "global batch %lld samples per GPU (grows with the option)",
             (long long)r->global_batch_per_gpu);
  else
    snprintf(buf, n, "global batch %lld samples x %lld tokens = %lld tokens per iteration for every "
             "option", (long long)r->global_batch, (long long)r->seq_len,
             (long long)(r->global_batch * r->seq_len));
}

static void write_csv(const hs_whatif_result_t *res, size_t shown, FILE *f)
{
  fprintf(f, "rank,option,n_gpus,added_usd_per_hour,usd_per_hour,global_batch,tokens_per_iteration,"
             "strategy,tokens_per_s,iteration_s,mfu,usd_per_million_tokens,pareto,plan,reason,"
             "reliable_lead\n");
  for (size_t i = 0; i < shown; i++) {
    const hs_whatif_row_t *r = &res->rows[i];
    fprintf(f, "%zu,", i + 1);
    hs_csv_field(f, r->option);
    /* unpriced: empty, never 0 or a partial sum (docs/schemas.md) */
    fprintf(f, ",%d,%.6g,", r->best.n_gpus, r->added_usd_per_hour);
    if (r->unpriced_gpus == 0)
      fprintf(f, "%.6g", r->usd_per_hour);
    fprintf(f, ",%lld,%lld,", (long long)r->best.global_batch,
            (long long)r->best.tokens_per_iteration);
    if (r->ok) {
      fprintf(f, "%s,%.6g,%.6g,%.4f,", r->strategy, r->best.tokens_per_s, r->best.iteration_s,
              r->best.mfu);
      if (isfinite(r->usd_per_million_tokens))
        fprintf(f, "%.6g", r->usd_per_million_tokens);
      fprintf(f, ",%s,", r->pareto ? "yes" : "no");
      hs_csv_field(f, r->best.plan);
      fputc(',', f);
    } else {
      fprintf(f, ",,,,,no,,");
      hs_csv_field(f, r->reason);
    }
    /* the best row only: yes / no, empty when the band is unknown */
    if (res->ranking_set && i == res->ranking_winner && isfinite(res->ranking_band))
      fprintf(f, ",%s", res->ranking_reliable ? "yes" : "no");
    else
      fputc(',', f);
    fputc('\n', f);
  }
}

static void write_table(const hs_whatif_result_t *res, size_t shown, FILE *f)
{
  char note[160];
  int lw = 12; /* option column width */
  hs_whatif_batch_note(res, note, sizeof note);
  fprintf(f, "%s on %s + purchases within %.2f USD/h (%s prices), %s:\n", res->model,
          res->base[0] ? res->base : "(nothing)", res->budget_usd_per_hour,
          hs_price_model_name(res->price), note);
  int32_t n_uncal = 0;
  for (int32_t k = 0; k < res->n_candidates; k++) {
    fprintf(f, "  %-16s %7.4f USD/GPU-h  (%s)%s\n", res->candidates[k],
            res->candidate_usd_per_gpu_hour[k], res->price_source[k],
            res->candidate_calibrated[k] ? "" : "  uncalibrated");
    n_uncal += !res->candidate_calibrated[k];
  }
  for (size_t i = 0; i < shown; i++)
    if ((int)strlen(res->rows[i].option) > lw)
      lw = (int)strlen(res->rows[i].option);
  fprintf(f, "%4s  %-*s %5s %9s %9s  %-13s %10s %8s %6s %8s %3s  %s\n", "rank", lw, "option", "GPUs",
          "+USD/h", "USD/h", "strategy", "tokens/s", "iter s", "MFU", "$/Mtok", "PF", "plan");
  for (size_t i = 0; i < shown; i++) {
    const hs_whatif_row_t *r = &res->rows[i];
    char uh[32] = "unpriced";
    if (r->unpriced_gpus == 0)
      snprintf(uh, sizeof uh, "%.2f", r->usd_per_hour);
    if (!r->ok) {
      fprintf(f, "%4zu  %-*s %5d %9.2f %9s  n/a: %s\n", i + 1, lw, r->option, r->best.n_gpus,
              r->added_usd_per_hour, uh, r->reason);
      continue;
    }
    char mt[32] = "-";
    if (r->unpriced_gpus > 0)
      snprintf(mt, sizeof mt, "unpriced");
    else if (isfinite(r->usd_per_million_tokens))
      snprintf(mt, sizeof mt, "%.4f", r->usd_per_million_tokens);
    fprintf(f, "%4zu  %-*s %5d %9.2f %9s  %-13s %10.0f %8.4f %5.1f%% %8s %3s  %s\n", i + 1, lw,
            r->option, r->best.n_gpus, r->added_usd_per_hour, uh, r->strategy,
            r->best.tokens_per_s, r->best.iteration_s, r->best.mfu * 100.0, mt,
            r->pareto ? "*" : "", r->best.plan);
  }
  if (shown < res->n_rows)
    fprintf(f, "(%zu more options; --top 0 shows all)\n", res->n_rows - shown);
  fprintf(f, "PF * = on the Pareto front of tokens/s against $/M tokens (no option is both faster "
             "and cheaper per token).\n");
  if (n_uncal > 0)
    fprintf(f, "note: uncalibrated candidates run on datasheet defaults (gemm_eff_max, "
               "gemm_half_flops, mem_eff, launch_us): no published kernel-level measurements in "
               "clusters/calibration/, so their rows are less certain than the others "
               "(docs/clusters.md).\n");
  if (res->base_unpriced_gpus)
    fprintf(f, "note: %d GPUs of the base cluster have no catalog price: USD/h and $/Mtok of the "
               "options that include them are unpriced (unknown, not 0), and those options are "
               "not on the Pareto front (give --gpu-price).\n", res->base_unpriced_gpus);
}

hs_status_t hs_whatif_write(const hs_whatif_result_t *r, hs_whatif_format_t fmt, size_t top,
                            FILE *f, hs_error_t *err)
{
  size_t shown = top > 0 && top < r->n_rows ? top : r->n_rows;
  if (fmt == HS_WHATIF_JSON)
    return hs_whatif_write_json(r, shown, f, err);
  if (fmt == HS_WHATIF_CSV)
    write_csv(r, shown, f);
  else
    write_table(r, shown, f);
  if (fmt == HS_WHATIF_TABLE && r->ranking_note[0])
    fprintf(f, "%s (in tokens/s)\n", r->ranking_note);
  if (ferror(f))
    return hs_error_set(err, HS_EIO, "whatif: write error");
  return HS_OK;
}
