/*
 * suggest.c - "did you mean" for names typed by people: command-line
 * options, GPU catalog entries, catalog models (hs_common.h,
 * hs_suggest_names).
 *
 * Ranking, first rule that finds anything wins:
 *   1. every token of the query (split at '-', '_', ' ', '.') is a token of
 *      the name, case-insensitive: "A100-40GB" -> "A100-SXM4-40GB",
 *      "A100-PCIE-40GB"; "llama3" -> "llama3-8b", "llama3-70b";
 *   2. the name starts with the query, case-insensitive ("H100" ->
 *      "H100-SXM5-80GB");
 *   3. the smallest case-insensitive edit distance to the whole name or to
 *      the name's prefix of the query's length, if at most max(2, len/3).
 * At most 4 names are listed, in catalog order. O(names x len^2).
 */
#include "hs_common.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#define NAME_CAP 128

static int edit_distance(const char *a, size_t na, const char *b, size_t nb)
{
  int prev[NAME_CAP + 1], cur[NAME_CAP + 1];
  na = HS_MIN(na, (size_t)NAME_CAP);
  nb = HS_MIN(nb, (size_t)NAME_CAP);
  for (size_t j = 0; j <= nb; j++)
    prev[j] = (int)j;
  for (size_t i = 1; i <= na; i++) {
    cur[0] = (int)i;
    for (size_t j = 1; j <= nb; j++) {
      int sub = prev[j - 1] + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
      int del = prev[j] + 1, ins = cur[j - 1] + 1;
      cur[j] = HS_MIN(sub, HS_MIN(del, ins));
    }
    memcpy(prev, cur, sizeof(int) * (nb + 1));
  }
  return prev[nb];
}

static bool is_sep(char c) { return c == '-' || c == '_' || c == ' ' || c == '.'; }

/* Is s[0..n) a whole token of name? */
static bool has_token(const char *name, const char *s, size_t n)
{
  for (const char *p = name; *p;) {
    while (*p && is_sep(*p))
      p++;
    const char *q = p;
    while (*q && !is_sep(*q))
      q++;
    if ((size_t)(q - p) == n && strncasecmp(p, s, n) == 0)
      return true;
    p = q;
  }
  return false;
}

static bool all_tokens(const char *query, const char *name)
{
  bool any = false;
  for (const char *p = query; *p;) {
    while (*p && is_sep(*p))
      p++;
    const char *q = p;
    while (*q && !is_sep(*q))
      q++;
    if (q > p) {
      if (!has_token(name, p, (size_t)(q - p)))
        return false;
      any = true;
    }
    p = q;
  }
  return any;
}

static int score(const char *query, const char *name)
{
  size_t len = strlen(query), nl = strlen(name);
  return HS_MIN(edit_distance(query, len, name, nl), edit_distance(query, len, name, HS_MIN(len, nl)));
}

void hs_suggest_names(const char *query, const char *const *names, size_t n, char *buf, size_t bufn)
{
  if (bufn == 0)
    return;
  buf[0] = '\0';
  size_t len = query ? strlen(query) : 0;
  if (len == 0 || n == 0)
    return;
  int rule = 0, best = 1 << 30;
  for (size_t i = 0; i < n && rule != 1; i++)
    if (all_tokens(query, names[i]))
      rule = 1;
  for (size_t i = 0; i < n && rule == 0; i++)
    if (strncasecmp(names[i], query, len) == 0)
      rule = 2;
  if (rule == 0) {
    for (size_t i = 0; i < n; i++)
      best = HS_MIN(best, score(query, names[i]));
    int limit = len <= 6 ? 2 : (int)(len / 3);
    if (best > limit)
      return;
    rule = 3;
  }
  size_t used = (size_t)snprintf(buf, bufn, " (did you mean ");
  int shown = 0;
  for (size_t i = 0; i < n && shown < 4 && used < bufn; i++) {
    bool hit = rule == 1   ? all_tokens(query, names[i])
               : rule == 2 ? strncasecmp(names[i], query, len) == 0
                           : score(query, names[i]) == best;
    if (!hit)
      continue;
    used += (size_t)snprintf(buf + used, bufn - used, "%s\"%s\"", shown ? ", " : "", names[i]);
    shown++;
  }
  if (used < bufn)
    snprintf(buf + used, bufn - used, "?)");
}
