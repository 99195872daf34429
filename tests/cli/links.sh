#!/usr/bin/env bash
# links.sh - the interconnect catalog through the CLI: `calibrate links`
# re-fits clusters/links.json from its stored nccl-tests files (exit 0) and
# exits 1 when a catalog value disagrees with its files; show cluster and
# simulate say which ports are calibrated (text and JSON); cluster files and
# catalogs with a bad interconnect exit 2 naming the file, field and value.
set -u
command -v jq >/dev/null || { echo "jq missing (scripts/setup.sh installs it)" >&2; exit 77; }
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
src=${HETSIM_DATA:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
die() { echo "FAIL: $*" >&2; fail=1; }

"$bin" calibrate links >"$tmp/out" 2>"$tmp/err" || die "calibrate links: exit $? $(cat "$tmp/err")"
grep -q '^NVLink3-NVSwitch .*a100_sxm4_1x8_all_reduce.txt 231.7/' "$tmp/out" || die "no NVLink3 row: $(cat "$tmp/out")"
grep -q '^HDR-IB-8x200 .*a100_sxm4_2x8_all_reduce.txt 182.8/' "$tmp/out" || die "no HDR row: $(cat "$tmp/out")"
# the NVLink4 ring port, fitted on the 8x H100 ring all-reduce (368.09 GB/s at 8 GiB); NDR stays uncalibrated
grep -q '^NVLink4-NVSwitch   intra_node .*h100_sxm5_1x8_all_reduce_ring.txt 368.1/' "$tmp/out" || die "no NVLink4 ring row: $(cat "$tmp/out")"
grep -q 'uncalibrated (no nccl-tests fit file): NDR-IB-8x400' "$tmp/out" || die "no uncalibrated list"
# the NVLS fit of NVLink4-NVSwitch on the published H100 table (478.87 GB/s at 8 GiB)
grep -q '^NVLink4-NVSwitch   nvls .*azure_nd_h100_v5_nvls_all_reduce.txt (14 rows >= 1048576 B) 478.9/' "$tmp/out" \
  || die "no NVLS row: $(cat "$tmp/out")"
# an nvls_GBps that is not its table's fit: exit 1
jq '(.interconnects[] | select(.name == "NVLink4-NVSwitch") | .nvls_GBps) = 300' "$src/clusters/links.json" >"$tmp/nv.json"
"$bin" calibrate links --links "$tmp/nv.json" --calibration-dir "$src/clusters/calibration" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || die "tampered nvls_GBps: exit $rc"
grep -q 'NVLink4-NVSwitch   nvls .*MISMATCH' "$tmp/out" || die "no NVLS MISMATCH: $(cat "$tmp/out")"
# a broken busbw table: exit 2 naming the file and line
mkdir -p "$tmp/cal/nccl-tests"
cp "$src"/clusters/calibration/nccl-tests/*.txt "$tmp/cal/nccl-tests/"
sed -i 's/^2048 0.14 2K$/2048 fast 2K/' "$tmp/cal/nccl-tests/azure_nd_h100_v5_nvls_all_reduce.txt"
"$bin" calibrate links --calibration-dir "$tmp/cal" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "broken busbw table: exit $rc"
grep -q 'azure_nd_h100_v5_nvls_all_reduce.txt:[0-9]*: busbw_GBps "fast"' "$tmp/err" || die "broken table message: $(cat "$tmp/err")"

# a catalog value that is not its files' fit: exit 1
jq '.interconnects[0].GBps = 250' "$src/clusters/links.json" >"$tmp/links.json"
"$bin" calibrate links --links "$tmp/links.json" --calibration-dir "$src/clusters/calibration" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || die "tampered catalog: exit $rc"
grep -q 'NVLink3-NVSwitch .*MISMATCH' "$tmp/out" || die "no MISMATCH: $(cat "$tmp/out")"
# a broken catalog: exit 2 naming the field
jq '.interconnects[1].scope = "pcie"' "$src/clusters/links.json" >"$tmp/bad.json"
"$bin" calibrate links --links "$tmp/bad.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "bad scope: exit $rc"
grep -q 'bad.json: interconnects\[1\].scope: must be "intra_node" or "nic", got "pcie"' "$tmp/err" \
  || die "bad scope message: $(cat "$tmp/err")"

# show cluster: calibrated A100 ports, H100: calibrated NVLink4 port, uncalibrated NDR NIC
"$bin" show cluster dgx-a100-4nodes >"$tmp/out" 2>&1 || die "show dgx-a100-4nodes"
grep -q 'interconnects: intra_node NVLink3-NVSwitch calibrated; nic HDR-IB-8x200 calibrated$' "$tmp/out" \
  || die "dgx-a100 interconnects line: $(cat "$tmp/out")"
"$bin" show cluster dgx-h100-4nodes >"$tmp/out" 2>&1 || die "show dgx-h100-4nodes"
grep -q 'interconnects: intra_node NVLink4-NVSwitch calibrated; nic NDR-IB-8x400 uncalibrated (uncalibrated' "$tmp/out" \
  || die "dgx-h100 interconnects line: $(cat "$tmp/out")"
# simulate --json lists the uncalibrated ports
"$bin" simulate --model gpt3-1.3b --cluster dgx-h100-4nodes --json >"$tmp/r.json" 2>"$tmp/err" || die "simulate: $(cat "$tmp/err")"
jq -e '.uncalibrated_links == ["nic NDR-IB-8x400"]' "$tmp/r.json" >/dev/null \
  || die "uncalibrated_links: $(jq -c .uncalibrated_links "$tmp/r.json")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-4nodes --json >"$tmp/r.json" 2>"$tmp/err" || die "simulate a100"
jq -e '.uncalibrated_links == []' "$tmp/r.json" >/dev/null || die "a100 uncalibrated_links: $(jq -c .uncalibrated_links "$tmp/r.json")"

# cluster files with a bad interconnect: exit 2, file, field, value
cat >"$tmp/c.json" <<'JSON'
{"sites": [{"name": "s", "nodes": [{"count": 2, "gpu": "A100-SXM4-80GB", "gpus_per_node": 8,
  "intra_node": {"interconnect": "NVLink9"}}]}]}
JSON
"$bin" show cluster "$tmp/c.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "unknown interconnect: exit $rc"
grep -q 'c.json: sites\[0\].nodes\[0\].intra_node.interconnect: unknown interconnect "NVLink9"' "$tmp/err" \
  || die "unknown interconnect message: $(cat "$tmp/err")"
sed 's/"intra_node": {"interconnect": "NVLink9"}/"nic": {"interconnect": "NVLink3-NVSwitch"}/' "$tmp/c.json" >"$tmp/d.json"
"$bin" show cluster "$tmp/d.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "wrong scope: exit $rc"
grep -q 'd.json: sites\[0\].nodes\[0\].nic.interconnect: interconnect "NVLink3-NVSwitch" has scope intra_node, not nic' "$tmp/err" \
  || die "wrong scope message: $(cat "$tmp/err")"
exit $fail
