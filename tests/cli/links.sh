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
# the NVLink4 ring port, fitted on the 8x H100 ring all-reduce (368.09 GB/s at 8 GiB); NDR on the
# 2 x 8 H100 ring table over 8 rails (392.69 GB/s at 8 GiB); every catalog entry has its files
grep -q '^NVLink4-NVSwitch   intra_node .*h100_sxm5_1x8_all_reduce_ring.txt 368.1/' "$tmp/out" || die "no NVLink4 ring row: $(cat "$tmp/out")"
grep -q '^NDR-IB-8x400 .*h100_sxm5_2x8_all_reduce_ring_ndr.txt 392.7/' "$tmp/out" || die "no NDR row: $(cat "$tmp/out")"
grep -q 'uncalibrated (no nccl-tests fit file): none' "$tmp/out" || die "uncalibrated list: $(cat "$tmp/out")"
# the NDR fit needs its rails: the same entry with one NIC cannot be fitted (the GPU port binds)
jq '(.interconnects[] | select(.name == "NDR-IB-8x400") | .rails) = 1' "$src/clusters/links.json" >"$tmp/r1.json"
"$bin" calibrate links --links "$tmp/r1.json" --calibration-dir "$src/clusters/calibration" >"$tmp/out" 2>"$tmp/err"; rc=$?
[ $rc -eq 1 ] || die "NDR with rails 1: exit $rc"
grep -q 'NDR-IB-8x400 .*MISMATCH' "$tmp/out" || die "no NDR MISMATCH with rails 1: $(cat "$tmp/out")"
grep -q 'h100_sxm5_2x8_all_reduce_ring_ndr.txt: busbw .* not identifiable' "$tmp/err" \
  || die "no not-identifiable warning with rails 1: $(cat "$tmp/err")"
# rails: only on a nic entry, an integer in [1, 64]
jq '(.interconnects[] | select(.name == "NVLink3-NVSwitch") | .rails) = 8' "$src/clusters/links.json" >"$tmp/r2.json"
"$bin" calibrate links --links "$tmp/r2.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "rails on intra_node entry: exit $rc"
grep -q 'r2.json: interconnects\[0\].rails: only for a nic interconnect (NICs per node), not scope intra_node, got 8' "$tmp/err" \
  || die "rails on intra_node message: $(cat "$tmp/err")"
jq '(.interconnects[] | select(.name == "NDR-IB-8x400") | .rails) = 0' "$src/clusters/links.json" >"$tmp/r3.json"
"$bin" calibrate links --links "$tmp/r3.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "rails 0: exit $rc"
grep -q 'r3.json: interconnects\[3\].rails' "$tmp/err" || die "rails 0 message: $(cat "$tmp/err")"
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

# show cluster: calibrated A100 and H100 ports (8 NIC rails each); a raw NIC port is uncalibrated
"$bin" show cluster dgx-a100-4nodes >"$tmp/out" 2>&1 || die "show dgx-a100-4nodes"
grep -q 'interconnects: intra_node NVLink3-NVSwitch calibrated; nic HDR-IB-8x200 calibrated$' "$tmp/out" \
  || die "dgx-a100 interconnects line: $(cat "$tmp/out")"
"$bin" show cluster dgx-h100-4nodes >"$tmp/out" 2>&1 || die "show dgx-h100-4nodes"
grep -q 'interconnects: intra_node NVLink4-NVSwitch calibrated; nic NDR-IB-8x400 calibrated$' "$tmp/out" \
  || die "dgx-h100 interconnects line: $(cat "$tmp/out")"
grep -q 'NIC 404.9 GB/s, 30.4 us, 8 rails = NDR-IB-8x400' "$tmp/out" || die "dgx-h100 node line: $(cat "$tmp/out")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-h100-4nodes --json >"$tmp/r.json" 2>"$tmp/err" || die "simulate: $(cat "$tmp/err")"
jq -e '.uncalibrated_links == []' "$tmp/r.json" >/dev/null \
  || die "h100 uncalibrated_links: $(jq -c .uncalibrated_links "$tmp/r.json")"
# simulate --json lists the uncalibrated ports: a raw NIC (with rails, which read back through show --json)
cat >"$tmp/raw.json" <<'JSON'
{"sites": [{"name": "s", "nodes": [{"count": 2, "gpu": "H100-SXM5-80GB", "gpus_per_node": 8,
  "intra_node": {"interconnect": "NVLink4-NVSwitch"}, "nic": {"GBps": 200, "latency_us": 10, "rails": 4}}]}]}
JSON
"$bin" simulate --model gpt3-1.3b --cluster "$tmp/raw.json" --json >"$tmp/r.json" 2>"$tmp/err" || die "simulate raw: $(cat "$tmp/err")"
jq -e '.uncalibrated_links == ["nic 200 GB/s"]' "$tmp/r.json" >/dev/null \
  || die "uncalibrated_links: $(jq -c .uncalibrated_links "$tmp/r.json")"
"$bin" show cluster "$tmp/raw.json" --json >"$tmp/show.json" 2>"$tmp/err" || die "show raw --json: $(cat "$tmp/err")"
jq -e '.sites[0].nodes[0].nic.rails == 4' "$tmp/show.json" >/dev/null || die "rails not written: $(jq -c .sites "$tmp/show.json")"
sed 's/"rails": 4/"rails": 65/' "$tmp/raw.json" >"$tmp/raw65.json"
"$bin" show cluster "$tmp/raw65.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "rails 65: exit $rc"
grep -q 'raw65.json: sites\[0\].nodes\[0\].nic.rails' "$tmp/err" || die "rails 65 message: $(cat "$tmp/err")"
sed 's/"intra_node": {"interconnect": "NVLink4-NVSwitch"}/"intra_node": {"GBps": 300, "rails": 2}/' "$tmp/raw.json" >"$tmp/rawi.json"
"$bin" show cluster "$tmp/rawi.json" >/dev/null 2>"$tmp/err"; rc=$?
[ $rc -eq 2 ] || die "rails on intra_node: exit $rc"
grep -q 'rawi.json: sites\[0\].nodes\[0\].intra_node.rails: only on the nic port (NICs per node), got 2' "$tmp/err" \
  || die "rails on intra_node message: $(cat "$tmp/err")"
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
