#!/usr/bin/env bash
# calibration.sh - published calibration and the published validation suite
# through the CLI: refitting a stored calibration file gives the catalog's
# figures; show cluster, simulate and compare say which GPUs are
# uncalibrated (text and JSON); `validate --published` prints every row
# and a MAPE line per table, --json parses, and broken row files or paths
# exit 2 naming the file and the field.
set -u
command -v jq >/dev/null || { echo "jq missing (scripts/setup.sh installs it)" >&2; exit 77; }
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
src=${HETSIM_DATA:?}
. "$(dirname "$0")/lib.bash"

# refit the H100 points: the catalog holds the fitted gemm_eff_max
"$bin" calibrate "$src/clusters/calibration/H100-SXM5-80GB.json" --dtype bf16 -o "$tmp/p.json" >/dev/null 2>"$tmp/err" \
  || die "calibrate: $(cat "$tmp/err")"
fit=$(jq '.gpus[0].gemm_eff_max' "$tmp/p.json")
cat=$(jq '.gpus[] | select(.name == "H100-SXM5-80GB") | .gemm_eff_max' "$src/clusters/gpus.json")
awk -v a="$fit" -v b="$cat" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }' \
  || die "catalog gemm_eff_max $cat is not the fit $fit"
# the same file's FlashAttention-2 points: the profile and the catalog hold
# the same fused-attention fields, and the simulator says so
for f in attn_fwd_eff_max attn_fwd_half_seq attn_bwd_eff_max attn_bwd_half_seq; do
  fit=$(jq ".gpus[0].$f" "$tmp/p.json")
  cat=$(jq ".gpus[] | select(.name == \"H100-SXM5-80GB\") | .$f" "$src/clusters/gpus.json")
  awk -v a="$fit" -v b="$cat" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b > 0 && d <= 1e-9 * b) }' \
    || die "catalog $f $cat is not the fit $fit"
done
"$bin" simulate --model gpt3-1.3b --cluster dgx-h100-1node --tp 1 --pp 1 --dp 8 --global-batch 16 \
  --attention flash >"$tmp/sim.txt" 2>"$tmp/err" || die "simulate: $(cat "$tmp/err")"
grep -q 'H100-SXM5-80GB calibrated, flash attention calibrated' "$tmp/sim.txt" \
  || die "simulate does not say the H100 flash attention rate is calibrated: $(grep profiles "$tmp/sim.txt")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 1 --dp 8 --global-batch 16 \
  --attention flash >"$tmp/sim.txt" 2>"$tmp/err" || die "simulate: $(cat "$tmp/err")"
grep -q 'A100-SXM4-80GB calibrated, flash attention uncalibrated (GEMM rate)' "$tmp/sim.txt" \
  || die "simulate does not say the A100 flash attention rate is uncalibrated: $(grep profiles "$tmp/sim.txt")"

# a GEMM shape sweep ("shape" fit) beside a best-achievable copy rate
# ("max" memory fit): the profile holds the GEMM terms and gemm_out_k and
# leaves the launch out (one copy size cannot determine it)
"$bin" calibrate "$src/clusters/calibration/A100-SXM4-40GB.json" -o "$tmp/a.json" >/dev/null 2>"$tmp/err" \
  || die "calibrate A100: $(cat "$tmp/err")"
jq -e '.gpus[0] | (has("launch_us") | not) and has("gemm_half_flops") and has("gemm_out_k")' "$tmp/a.json" >/dev/null \
  || die "shape + max fit profile: wrong terms: $(cat "$tmp/a.json")"
fit=$(jq '.gpus[0].mem_eff' "$tmp/a.json")
cat=$(jq '.gpus[] | select(.name == "A100-SXM4-40GB") | .mem_eff' "$src/clusters/gpus.json")
awk -v a="$fit" -v b="$cat" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= 1e-9 * b) }' \
  || die "catalog A100-40GB mem_eff $cat is not the fit $fit"
jq '.gemm_fit = "best"' "$src/clusters/calibration/A100-SXM4-40GB.json" >"$tmp/badfit.json"
"$bin" calibrate "$tmp/badfit.json" -o "$tmp/x.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "bad gemm_fit: exit $rc"
grep -q 'badfit.json: gemm_fit: must be "line", "shape" or "max", got "best"' "$tmp/err" || die "bad gemm_fit message: $(cat "$tmp/err")"

# uncalibrated GPUs are named, calibrated ones too. No shipped cluster has
# an uncalibrated GPU since the T4 was calibrated (issue #33): the mixed
# cluster with its T4 node made L40S (uncalibrated) serves
"$bin" show cluster mixed-a100-v100-t4 >"$tmp/show.txt" || die "show cluster"
jq '(.sites[].nodes[] | select(.gpu == "T4-16GB") | .gpu) = "L40S-48GB" | .name = "mixed-unc"' \
  "$src/clusters/catalog/mixed-a100-v100-t4.json" >"$tmp/mixed-unc.json" || die "jq mixed-unc"
unc="$tmp/mixed-unc.json"
"$bin" show cluster "$unc" >"$tmp/showu.txt" || die "show cluster mixed-unc"
grep -q 'L40S-48GB uncalibrated' "$tmp/showu.txt" || die "show cluster does not say uncalibrated: $(cat "$tmp/showu.txt")"
grep -q 'T4-16GB calibrated' "$tmp/show.txt" || die "show cluster does not say T4 calibrated: $(cat "$tmp/show.txt")"
grep -q 'V100-SXM2-16GB calibrated' "$tmp/show.txt" || die "show cluster does not say V100 calibrated"
grep -q 'A100-SXM4-80GB calibrated' "$tmp/show.txt" || die "show cluster does not say A100 calibrated"
"$bin" show cluster dgx-h100-1node >"$tmp/show2.txt" || die "show cluster h100"
grep -q 'H100-SXM5-80GB calibrated' "$tmp/show2.txt" || die "H100 not shown calibrated"
# overlap contention: GPUs without a published overlap_slowdown (T4, V100)
# are named; A100-SXM4 and H100-SXM5 carry one (clusters/gpus.json)
grep -q 'overlap contention uncalibrated (ideal overlap, no overlap_slowdown): .*T4-16GB' "$tmp/show.txt" \
  || die "show cluster does not name T4's ideal overlap: $(grep profiles "$tmp/show.txt")"
grep -q 'overlap contention uncalibrated.*A100' "$tmp/show.txt" && die "A100 named without overlap_slowdown"
grep -q 'overlap contention' "$tmp/show2.txt" && die "H100 named without overlap_slowdown: $(grep profiles "$tmp/show2.txt")"
"$bin" simulate --model gpt3-1.3b --cluster mixed-a100-v100-t4 --tp 1 --pp 1 --dp 4 --global-batch 8 \
  >"$tmp/sim3.txt" 2>"$tmp/err" || die "simulate mixed: $(cat "$tmp/err")"
# (the default kernel set's flash attention adds "flash attention
# uncalibrated (GEMM rate)" to GPUs without a fused-attention fit: not this check)
grep '^device profiles' "$tmp/sim3.txt" | grep -q 'A100-SXM4-80GB calibrated[,;]' \
  || die "simulate does not name A100 calibrated: $(grep profiles "$tmp/sim3.txt")"
grep '^device profiles' "$tmp/sim3.txt" | grep -q 'A100-SXM4-80GB calibrated[^;]*overlap contention' \
  && die "simulate names A100 contention uncalibrated: $(grep profiles "$tmp/sim3.txt")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 1 --pp 1 --dp 8 --global-batch 16 --overlap-contention maybe \
  >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "--overlap-contention maybe: exit $rc"
grep -q -- '--overlap-contention: must be on or off, got "maybe"' "$tmp/err" || die "bad --overlap-contention message: $(cat "$tmp/err")"
"$bin" show cluster "$unc" --json | jq -e '.uncalibrated_gpus | index("L40S-48GB") != null' >/dev/null \
  || die "show cluster --json lacks uncalibrated_gpus"
"$bin" simulate --model bert-base --cluster "$unc" --tp 1 --pp 1 >"$tmp/sim.txt" || die "simulate"
grep -q 'L40S-48GB uncalibrated' "$tmp/sim.txt" || die "simulate does not say uncalibrated"
"$bin" simulate --model bert-base --cluster "$unc" --tp 1 --pp 1 --json \
  | jq -e '.uncalibrated_gpus == ["L40S-48GB"]' >/dev/null || die "simulate --json lacks uncalibrated_gpus"
"$bin" simulate --model bert-base --cluster mixed-a100-v100-t4 --tp 1 --pp 1 --json \
  | jq -e '.uncalibrated_gpus == []' >/dev/null || die "simulate --json: calibrated T4 listed as uncalibrated"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 1 --json \
  | jq -e '.uncalibrated_gpus == []' >/dev/null || die "simulate --json: calibrated A100 listed as uncalibrated"
"$bin" compare --model bert-base --cluster "$unc" --strategies megatron >"$tmp/cmp.txt" || die "compare"
grep -q 'L40S-48GB uncalibrated' "$tmp/cmp.txt" || die "compare does not say uncalibrated"

"$bin" list gpus >"$tmp/gpus.txt" || die "list gpus"
grep -qE '^H100-SXM5-80GB .* calibrated$' "$tmp/gpus.txt" || die "list gpus: H100 not calibrated"
grep -qE '^A100-SXM4-80GB .* calibrated$' "$tmp/gpus.txt" || die "list gpus: A100 not calibrated"
grep -qE '^V100-SXM2-16GB .* calibrated$' "$tmp/gpus.txt" || die "list gpus: V100 not calibrated"
grep -qE '^T4-16GB .* calibrated$' "$tmp/gpus.txt" || die "list gpus: T4 not calibrated"
grep -qE '^L40S-48GB .* uncalibrated$' "$tmp/gpus.txt" || die "list gpus: L40S not uncalibrated"
grep -qE '^RTX-2080Ti-11GB .* uncalibrated$' "$tmp/gpus.txt" || die "list gpus: RTX 2080 Ti not uncalibrated"

# the published suite: one line per row, a MAPE line per table, JSON
table="$src/validate/published/megatron-sc21-table1.json"
"$bin" validate --published "$table" -o "$tmp/pub.json" >"$tmp/pub.txt" 2>"$tmp/err" \
  || die "validate --published: $(cat "$tmp/err")"
rows=$(jq '.rows | length' "$table")
[ "$(grep -cE '^  [0-9.]+[BT] ' "$tmp/pub.txt")" -eq "$rows" ] || die "not one line per row: $(cat "$tmp/pub.txt")"
grep -q '^  MAPE ' "$tmp/pub.txt" || die "no MAPE line"
jq -e --argjson n "$rows" '.tables[0].rows | length == $n' "$tmp/pub.json" >/dev/null || die "JSON rows"
jq -e '.tables[0].mape > 0 and .tables[0].mape <= .tables[0].max_mape' "$tmp/pub.json" >/dev/null || die "JSON mape"

# broken inputs: exit 2, file and field named
jq '.rows[0].plan.global_batch = 500' "$table" >"$tmp/bad1.json"
"$bin" validate --published "$tmp/bad1.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "bad global batch: exit $rc"
grep -q 'bad1.json: rows\[0\].plan.global_batch: 500' "$tmp/err" || die "bad global batch message: $(cat "$tmp/err")"
jq '.rows[2].nodes = 3' "$table" >"$tmp/bad2.json"
"$bin" validate --published "$tmp/bad2.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "bad nodes: exit $rc"
grep -q 'bad2.json: rows\[2\] (7.5B): nodes: the cluster has 24 GPUs' "$tmp/err" || die "bad nodes message: $(cat "$tmp/err")"
"$bin" validate --published "$tmp/none" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "missing path: exit $rc"
mkdir "$tmp/empty"
"$bin" validate --published "$tmp/empty" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "empty directory: exit $rc"
grep -q 'no \*.json row files' "$tmp/err" || die "empty directory message: $(cat "$tmp/err")"
exit $fail
