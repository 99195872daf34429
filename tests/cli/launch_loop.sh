#!/usr/bin/env bash
# launch_loop.sh - the real-run loop through the command line (docs/export.md
# "Launch arguments", docs/import.md): plan -> export --to megatron -> the
# log Megatron-LM prints with those arguments (synthetic, real format) ->
# import megatron-log -> validate --run --max-error (exit 0 or 4); the
# import flags for a log without an arguments block; import nccl-tests'
# one-message refusals and --algo / NCCL_ALGO; and every broken input of the
# new flags (exit 2 naming the flag and value; exit 3 for plans a framework
# cannot express).
set -u
H=${HETSIM_BIN:?}
D=${HETSIM_TEST_DATA:?}/import
. "$(dirname "$0")/lib.bash"

# plan -> Megatron arguments (only flags of Megatron-LM's arguments.py:
# test_export_launch checks them against the transcribed list)
expect 0 "$H" plan --model gpt3-1.3b --cluster dgx-a100-1node --strategy megatron --quiet \
  -o "$tmp/plan.json"
expect 0 "$H" export "$tmp/plan.json" --to megatron --model gpt3-1.3b --cluster dgx-a100-1node \
  -o "$tmp/args.sh"
has "$tmp/args.sh" "--tensor-model-parallel-size"
has "$tmp/args.sh" "--global-batch-size"
bash -n "$tmp/args.sh" && ok || bad "args.sh is not valid bash"
expect 0 "$H" export "$tmp/plan.json" --to deepspeed --model gpt3-1.3b --cluster dgx-a100-1node
has "$tmp/out" "\"train_micro_batch_size_per_gpu\""
# the log Megatron prints for those arguments: key = flag name with
# underscores (argparse dest), switches True, plus what validate_args derives
read -r world dp < <(sed -n 's/.*world size \([0-9]*\) = tp [0-9]* x pp [0-9]* x dp \([0-9]*\).*/\1 \2/p' "$tmp/args.sh")
{
  echo "------------------------ arguments ------------------------"
  awk '$1 ~ /^--/ { k = substr($1, 3); gsub(/-/, "_", k); v = ($2 == "\\") ? "True" : $2
                    if (k == "disable_bias_linear") { k = "add_bias_linear"; v = "False" }
                    printf "  %s ........................ %s\n", k, v }' "$tmp/args.sh"
  echo "  world_size ........................ $world"
  echo "  data_parallel_size ........................ $dp"
  echo "  padded_vocab_size ........................ 51200"
  echo "-------------------- end of arguments ---------------------"
  for i in 1 2 3 4; do
    echo " [2026-12-02 07:00:0$i] iteration       ${i}0/    1000 | consumed samples:          640 | elapsed time per iteration (ms): 100$i.0 | learning rate: 1.0E-04 | global batch size:   64 | lm loss: 9.0E+00 |"
  done
} >"$tmp/train.log"
expect 0 "$H" import megatron-log "$tmp/train.log" -o "$tmp/run.json"
has "$tmp/out" "24 layers, hidden 2048, 16 heads"
expect 0 "$H" validate --run "$tmp/run.json" --cluster dgx-a100-1node --max-error 1000
has "$tmp/out" "verdict: ok"
expect 4 "$H" validate --run "$tmp/run.json" --cluster dgx-a100-1node --max-error 0.001
has "$tmp/out" "verdict: off"
has "$tmp/err" "--max-error 0.001%"
for v in 0 -1 abc 1001; do
  expect 2 "$H" validate --run "$tmp/run.json" --cluster dgx-a100-1node --max-error "$v"
  has "$tmp/err" "--max-error"
done

# a log without its arguments block: the flags give the run
sed '/-- arguments --/,/-- end of arguments --/d' "$tmp/train.log" >"$tmp/bare.log"
expect 2 "$H" import megatron-log "$tmp/bare.log" --tp 1
has "$tmp/err" "missing: --model, --pp, --dp, --micro-batch-size, --global-batch-size"
expect 0 "$H" import megatron-log "$tmp/bare.log" --model gpt3-1.3b --tp 1 --pp 1 --dp 8 \
  --micro-batch-size 8 --global-batch-size 64 -o "$tmp/bare.json"
has "$tmp/out" "plan: tp 1, pp 1, dp 8, micro batch 8, global batch 64"
expect 2 "$H" import megatron-log "$tmp/bare.log" --model gpt3-1.3b --tp 1 --pp 1 --dp 3 \
  --micro-batch-size 8 --global-batch-size 64
has "$tmp/err" "--global-batch-size 64 is not a multiple of --dp 3 x --micro-batch-size 8"
expect 2 "$H" import megatron-log "$tmp/bare.log" --tp 0;  has "$tmp/err" "--tp"
expect 2 "$H" import megatron-log "$tmp/bare.log" --global-batch-size x; has "$tmp/err" "--global-batch-size"
expect 2 "$H" import megatron-log "$tmp/bare.log" --seq-length 512; has "$tmp/err" "--seq-length goes with --model"
expect 2 "$H" import megatron-log "$tmp/bare.log" --model no-such-model; has "$tmp/err" "no-such-model"
# with the block, a disagreeing flag is refused naming both values
expect 2 "$H" import megatron-log "$tmp/train.log" --pp 4
has "$tmp/err" "--pp 4 disagrees with the arguments block's pipeline_model_parallel_size"
expect 2 "$H" import megatron-log "$tmp/train.log" --model llama2-7b
has "$tmp/err" "--model (layers) 32 disagrees with the arguments block's num_layers 24"

# export: refusals
expect 2 "$H" export "$tmp/plan.json" --to fsdp --model gpt3-1.3b --cluster dgx-a100-1node
has "$tmp/err" "--to: megatron or deepspeed, got \"fsdp\""
expect 2 "$H" export "$tmp/plan.json" --to megatron;  has "$tmp/err" "needs --model M and --cluster C"
expect 2 "$H" export "$tmp/plan.json" --to megatron --model gpt3-1.3b --cluster dgx-a100-1node --svg x.svg
has "$tmp/err" "--to takes a plan"
echo '{"pipelines": [' >"$tmp/broken.json"
expect 2 "$H" export "$tmp/broken.json" --to megatron --model gpt3-1.3b --cluster dgx-a100-1node
has "$tmp/err" "broken.json"
expect 2 "$H" export "$tmp/plan.json" --to megatron --model llama2-7b --cluster dgx-a100-1node
has "$tmp/err" "plan.json"
# a hapt plan (ZeRO-2): exit 3, every inexpressible part named
expect 0 "$H" plan --model gpt3-1.3b --cluster a100-v100-two-sites --strategy hapt --quiet \
  -o "$tmp/hapt.json"
expect 3 "$H" export "$tmp/hapt.json" --to megatron --model gpt3-1.3b --cluster a100-v100-two-sites
has "$tmp/err" "Megatron-LM cannot express"
hasnot "$tmp/out" "--tensor-model-parallel-size"

# nccl-tests: every missing header fact in one message
grep -v "Rank " "$D/nccl_all_reduce_coreweave_a100.txt" | grep -v '^\.\.\.' >"$tmp/no_devices.txt"
expect 2 "$H" import nccl-tests "$tmp/no_devices.txt" "$D/nccl_all_reduce_coreweave_a100.txt"
has "$tmp/err" "the headers of 2 files do not say"
has "$tmp/err" "no_devices.txt: the GPU (no device lines; give --gpu NAME), how the ranks sit on nodes (give --gpus-per-node K)"
has "$tmp/err" "nccl_all_reduce_coreweave_a100.txt: how the ranks sit on nodes (give --gpus-per-node K)"
# a device name the catalog cannot place is named in the same message
expect 2 "$H" import nccl-tests "$D/nccl_all_reduce_a3mega_h100_2x8.txt" "$D/nccl_all_reduce_coreweave_a100.txt"
has "$tmp/err" "nccl_all_reduce_a3mega_h100_2x8.txt: the GPU (device \"NVIDIA H100 80GB HBM3\" matches several GPU catalog entries"
has "$tmp/err" "nccl_all_reduce_coreweave_a100.txt: how the ranks sit on nodes (give --gpus-per-node K)"
# NCCL_ALGO: from the file or --algo, fitted as that algorithm
{ echo "# NCCL_ALGO=Tree"; cat "$D/nccl_all_reduce_a3mega_h100_2x8.txt"; } >"$tmp/tree.txt"
expect 0 "$H" import nccl-tests "$tmp/tree.txt" --gpu H100-SXM5-80GB
has "$tmp/out" "NCCL_ALGO tree (fitted as node_tree)"
expect 0 "$H" import nccl-tests "$D/nccl_all_reduce_a3mega_h100_2x8.txt" --gpu H100-SXM5-80GB --algo tree
has "$tmp/out" "NCCL_ALGO tree (fitted as node_tree)"
expect 2 "$H" import nccl-tests "$tmp/tree.txt" --gpu H100-SXM5-80GB --algo ring
has "$tmp/err" "tree.txt:1: --algo ring, but the file ran NCCL_ALGO tree"
expect 2 "$H" import nccl-tests "$tmp/tree.txt" --algo pat;  has "$tmp/err" "--algo: must be ring, tree or nvls"
{ echo "host:1:1 [0] NCCL INFO NCCL_ALGO set by environment to CollNetDirect"; cat "$D/nccl_all_gather_2xH200.txt"; } >"$tmp/collnet.txt"
expect 2 "$H" import nccl-tests "$tmp/collnet.txt"
has "$tmp/err" "collnet.txt:1: NCCL_ALGO \"CollNetDirect\""

echo "launch_loop: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
