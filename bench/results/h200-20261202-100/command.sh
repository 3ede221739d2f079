# Run 100: the review mend (global_ns in common.cuh, the batch line's last step built once): ops,
# backend tiny / tiny-bf16, and one bench with --timeline and --graph-marks (hashes, marks, timelines).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
{ $m --version | head -1
  timeout 170 $t ops --seed 100 2>&1 | grep -E "FAIL|checks" | cut -c1-200
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
timeout 150 $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 --timeline --graph-marks > $OUT/bench.json 2> $OUT/bench.err
echo "bench rc=$?"; python3 bench/graph_marks.py $OUT/bench.json --top 6 | tee $OUT/marks.txt | grep -E "^decode|^verify|^batch|main chain"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print([x["logits_xxh3"][:12] for x in d["decode"]], [len(x["timeline"]["sites"]) for x in d["batch"]], d.get("failures"))' $OUT/bench.json
