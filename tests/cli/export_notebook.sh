#!/usr/bin/env bash
# export_notebook.sh - a sweep's CSV exported to a notebook that executes
# headless without a cell error (Debian's python3-nbclient, -ipykernel,
# -matplotlib, -pandas; scripts/setup.sh installs them), to JSON with one
# object per CSV row, and to a tidy CSV; broken CSVs are refused naming the
# line. Exits 77 (skip) only when /usr/bin/python3 lacks those modules.
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
data=${HETSIM_TEST_DATA:?}
. "$(dirname "$0")/lib.bash"
py=/usr/bin/python3

"$bin" sweep "$data/sweep/small.json" -o "$tmp/results.csv" --quiet || die "sweep failed"
"$bin" export "$tmp/results.csv" --notebook "$tmp/analysis.ipynb" --json "$tmp/results.json" \
  --tidy "$tmp/tidy.csv" 2>"$tmp/err" || die "export failed: $(cat "$tmp/err")"
# same input, same bytes
"$bin" export "$tmp/results.csv" --notebook "$tmp/again.ipynb" 2>/dev/null
cmp -s "$tmp/analysis.ipynb" "$tmp/again.ipynb" || die "notebook bytes differ between two exports"

# JSON: schema_version, the columns, one object per row, numbers as numbers (checked with the stdlib)
$py - "$tmp/results.csv" "$tmp/results.json" "$tmp/tidy.csv" <<'PY' || fail=1
import csv, json, sys
rows = list(csv.DictReader(open(sys.argv[1])))
doc = json.load(open(sys.argv[2]))
# versioned like every JSON result (docs/schemas.md); columns in the CSV's order
ok = doc["schema_version"] == 1 and doc["columns"] == list(rows[0].keys())
js = doc["rows"]
ok &= len(js) == len(rows)
for r, j in zip(rows, js):
    for k, v in r.items():
        if v == "":
            ok &= j[k] is None
        elif k in ("tokens_per_s", "usd_per_hour", "n_gpus"):
            ok &= isinstance(j[k], (int, float)) and abs(j[k] - float(v)) <= 1e-9 * abs(float(v))
tidy = list(csv.DictReader(open(sys.argv[3])))
# one tidy line per non-empty cell of each numeric result column
metrics = ["n_gpus_used", "global_batch", "tokens_per_iteration", "iteration_s", "tokens_per_s", "mfu", "peak_memory_fraction",
           "usd_per_hour", "unpriced_gpus", "usd_per_iteration", "usd_per_million_tokens", "train_tokens",
           "time_to_train_h", "cost_to_train_usd", "search_s"]
metrics += ["time_%s_s" % k for k in ("compute", "recompute", "tp_comm", "pp_comm", "dp_comm", "bubble", "optimizer")]
metrics += ["mem_%s_bytes" % k for k in ("weights", "gradients", "optimizer", "activations", "workspace")]
want = sum(1 for r in rows for m in metrics if r[m] != "")
ok &= len(tidy) == want and {t["metric"] for t in tidy} <= set(metrics)
if not ok:
    print(f"FAIL: json/tidy: {len(js)} json rows, {len(rows)} csv rows, {len(tidy)} tidy lines, want {want}", file=sys.stderr)
sys.exit(0 if ok else 1)
PY

# broken inputs: exit 2 naming the file and line
printf 'a,b\n1,2,3\n' >"$tmp/bad.csv"
"$bin" export "$tmp/bad.csv" --json "$tmp/x.json" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'bad.csv: line 2' "$tmp/err" || die "broken CSV: $(cat "$tmp/err")"
printf 'a,b\n1,2\n' >"$tmp/other.csv"
"$bin" export "$tmp/other.csv" --notebook "$tmp/x.ipynb" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q 'column "cluster" missing' "$tmp/err" || die "non-sweep CSV: $(cat "$tmp/err")"
"$bin" export "$tmp/results.csv" 2>"$tmp/err"
[ $? -eq 2 ] || die "export without an output should exit 2"

# execute the notebook headless; any cell error fails. The kernel draws with
# matplotlib-inline (Agg underneath, no display needed) so figures land in
# the outputs and are counted.
if ! $py -c 'import nbformat, nbclient, ipykernel, matplotlib, pandas' 2>/dev/null; then
  echo "SKIP: /usr/bin/python3 lacks nbformat/nbclient/ipykernel/matplotlib/pandas (scripts/setup.sh installs them)" >&2
  [ $fail -eq 0 ] && exit 77
  exit $fail
fi
run_nb() {
  (cd "$(dirname "$1")" && env -u MPLBACKEND PYDEVD_DISABLE_FILE_VALIDATION=1 $py -Xfrozen_modules=off - "$1" <<'PY'
import sys, nbformat, nbclient
nb = nbformat.read(sys.argv[1], as_version=4)
nbformat.validate(nb)
nbclient.NotebookClient(nb, kernel_name="python3", timeout=600).execute()  # raises on a cell error
errors = [o for c in nb.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
images = sum(1 for c in nb.cells for o in c.get("outputs", []) if "image/png" in o.get("data", {}))
print(f"{len(nb.cells)} cells, {images} figures, {len(errors)} errors")
titles = ' '.join(str(o.get('text', '')) + str(o.get('data', {}).get('text/plain', ''))
                 for c in nb.cells for o in c.get('outputs', []))
# the breakdown, memory, heatmap and bandwidth cells draw (no "no ..." fallbacks)
fallbacks = [m for m in ('no successful rows with a time breakdown', 'no successful rows with a memory',
                         'fewer than two inputs vary', 'does not vary in this sweep') if m in titles]
print(f"fallbacks: {fallbacks}")
sys.exit(1 if errors or images < 8 or fallbacks else 0)
PY
  )
}
run_nb "$tmp/analysis.ipynb" >"$tmp/nb.out" 2>&1 || die "notebook execution failed: $(tail -30 "$tmp/nb.out")"
# a table where every point failed still executes cleanly
cat >"$tmp/fails.json" <<'J'
{"clusters": ["dgx-a100-1node"], "models": ["no-such-model"], "strategies": ["megatron", "whale"]}
J
mkdir -p "$tmp/f"
"$bin" sweep "$tmp/fails.json" -o "$tmp/f/fails.csv" --quiet
"$bin" export "$tmp/f/fails.csv" --notebook "$tmp/f/fails.ipynb" 2>/dev/null || die "export of failures failed"
(cd "$tmp/f" && env -u MPLBACKEND PYDEVD_DISABLE_FILE_VALIDATION=1 $py -Xfrozen_modules=off -c '
import nbformat, nbclient
nb = nbformat.read("fails.ipynb", as_version=4)
nbclient.NotebookClient(nb, kernel_name="python3", timeout=600).execute()
') >"$tmp/nb2.out" 2>&1 || die "notebook of an all-failed sweep failed: $(tail -30 "$tmp/nb2.out")"
exit $fail
