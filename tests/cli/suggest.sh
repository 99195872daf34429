#!/usr/bin/env bash
# suggest.sh - Megatron-LM flag names are aliases of the hetsim options of
# the same meaning (same report, byte for byte, as the hetsim names); a flag
# with a different meaning is refused with what to use instead; unknown
# options, GPUs and catalog models get "did you mean" suggestions
# (A100-40GB -> both A100 40 GB catalog entries).
set -u
bin=${HETSIM_BIN:?HETSIM_BIN must point at the hetsim binary}
. "$(dirname "$0")/lib.bash"

"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --microbatch-size 2 \
  --global-batch 32 --recompute full --seq-len 1024 --json >"$tmp/a.json" 2>"$tmp/err" || die "hetsim flags: $(cat "$tmp/err")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tensor-model-parallel-size 2 \
  --pipeline-model-parallel-size 2 --micro-batch-size 2 --global-batch-size 32 --recompute-granularity full \
  --seq-length 1024 --json >"$tmp/b.json" 2>"$tmp/err" || die "Megatron flags: $(cat "$tmp/err")"
cmp -s "$tmp/a.json" "$tmp/b.json" || die "Megatron flags give a different report"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --schedule interleaved-1f1b --chunks 2 \
  --json >"$tmp/c.json" 2>"$tmp/err" || die "chunks: $(cat "$tmp/err")"
"$bin" simulate --model gpt3-1.3b --cluster dgx-a100-1node --tp 2 --pp 2 --schedule interleaved-1f1b \
  --virtual-pipeline-model-parallel-size 2 --json >"$tmp/d.json" 2>"$tmp/err" || die "vpp: $(cat "$tmp/err")"
cmp -s "$tmp/c.json" "$tmp/d.json" || die "--virtual-pipeline-model-parallel-size differs from --chunks"
"$bin" simulate --help | grep -q -- '--tensor-model-parallel-size *= --tp' || die "--help does not list the aliases"

# expect_err "regex" CMD...: exit 2 and stderr matches
expect_err() {
  local re=$1; shift
  "$@" >/dev/null 2>"$tmp/err"; local rc=$?
  [ $rc -eq 2 ] && grep -qE -- "$re" "$tmp/err" || die "$* -> exit $rc: $(cat "$tmp/err") (want /$re/)"
}
expect_err "did you mean \"--microbatch-size\"" "$bin" simulate --microbatchsize 2
expect_err "did you mean \"--tensor-model-parallel-size\"" "$bin" simulate --tesnor-model-parallel-size 2
expect_err "unknown option '--num-layers-per-virtual-pipeline-stage': .*--chunks" "$bin" simulate --num-layers-per-virtual-pipeline-stage 2
expect_err "unknown option '--zzzz' \(see --help\)" "$bin" simulate --zzzz
expect_err 'model "llama3": .*did you mean "llama3-70b", "llama3-8b"' "$bin" show model llama3
expect_err 'model "lama2-7b": .*did you mean "llama2-7b"' "$bin" show model lama2-7b
cat >"$tmp/c.json" <<'J'
{"name": "x", "sites": [{"name": "a", "nodes": [{"count": 1, "gpu": "A100-40GB", "gpus_per_node": 8}]}]}
J
expect_err 'c.json: sites\[0\].nodes\[0\].gpu: unknown GPU "A100-40GB" \(did you mean "A100-SXM4-40GB", "A100-PCIe-40GB"\?\)' \
  "$bin" show cluster "$tmp/c.json"
sed 's/A100-40GB/A1OO-SXM4-80GB/' "$tmp/c.json" >"$tmp/d.json"
expect_err 'unknown GPU "A1OO-SXM4-80GB" \(did you mean "A100-SXM4-80GB"\?\)' "$bin" show cluster "$tmp/d.json"
# strategies, subcommands and --candidates GPUs: the names a user meant
expect_err 'unknown strategy "hpat" \(did you mean "hapt"' "$bin" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy hpat
expect_err 'unknown strategy "megatorn" \(did you mean "megatron"' "$bin" compare --model gpt3-1.3b --cluster dgx-a100-1node \
  --strategies megatorn
expect_err 'unknown strategy "data-paralel" \(did you mean "data-parallel"' "$bin" elastic --model gpt3-1.3b \
  --cluster dgx-a100-1node --strategy data-paralel --hours 1
expect_err "unknown command 'simulat' \(did you mean \"simulate\"" "$bin" simulat
expect_err 'unknown GPU "H100" \(did you mean "H100-SXM5-80GB", "H100-PCIe-80GB"' "$bin" whatif --model gpt3-1.3b \
  --cluster dgx-a100-1node --budget-usd-per-hour 100 --candidates H100
exit $fail
