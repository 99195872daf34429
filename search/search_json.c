/*
 * search_json.c - one planner run as JSON: what `hetsim plan --json` prints
 * and the Python package's Plan.result() returns (strategy, inputs, search
 * statistics, the plan and its simulated report).
 *
 * Invariant: keys in a fixed order, numbers as cJSON prints them, so the
 * same run gives the same bytes wherever it is printed.
 */
#include "hs_json.h"
#include "hs_search.h"

#include <cjson/cJSON.h>

cJSON *hs_search_result_to_json(const char *strategy, const char *model, const char *cluster,
                                const hs_search_stats_t *stats, const hs_plan_t *plan,
                                const hs_report_t *report)
{
  cJSON *jp = hs_plan_to_json(plan), *jr = hs_report_to_json(report);
  hs_json_oom_clear(); /* the two builders above clear it themselves */
  cJSON *j = cJSON_CreateObject();
  if (!j || !jp || !jr) {
    cJSON_Delete(j);
    cJSON_Delete(jp);
    cJSON_Delete(jr);
    return NULL;
  }
  /* the simulated report's summary names layers (it had the model); a bare
   * plan can only name op ranges */
  char summary[256];
  if (report->plan_summary[0])
    hs_strlcpy(summary, report->plan_summary, sizeof summary);
  else
    hs_plan_summary(plan, summary, sizeof summary);
  cJSON_AddStringToObject(j, "strategy", strategy);
  cJSON_AddStringToObject(j, "model", model);
  cJSON_AddStringToObject(j, "cluster", cluster);
  cJSON_AddNumberToObject(j, "search_s", stats->search_s);
  cJSON_AddNumberToObject(j, "candidates", (double)stats->candidates);
  cJSON_AddNumberToObject(j, "predicted_s", stats->predicted_s);
  cJSON_AddBoolToObject(j, "optimal", stats->optimal);
  cJSON_AddStringToObject(j, "note", stats->note);
  cJSON_AddStringToObject(j, "summary", summary);
  hs_json_add(j, "plan", jp);
  hs_json_add(j, "report", jr);
  return hs_json_finish(j);
}
