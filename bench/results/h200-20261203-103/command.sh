# Run 103: the decode attention with every key slice staged at once (MEMRA_CUDA_ATTN_STAGE_ALL) and
# the Sinkhorn apart from hc_pre on its own stream (MEMRA_CUDA_HC_COMB_APART). Tests: ops (every
# group), the planted library (the staging skips the last key; hc_comb runs one iteration fewer) on
# ops attention and mhc, backend tiny / tiny-bf16. Bench A/B in one binary, three passes: def, sa0,
# ca0, off (both 0); one run with graph marks.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 170 $t ops --seed 103 > /tmp/ops.txt 2>&1; echo "ops rc=$?"
  grep -E "FAIL|checks" /tmp/ops.txt | cut -c1-200; grep -cE "comb apart.*bit-equal" /tmp/ops.txt; grep -E "cluster kernel" /tmp/ops.txt | cut -c1-160
  [[ -d $P/planted ]] && for g in attention mhc; do
    LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only $g --seed 103 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -5
  done
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
timeout 100 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 --graph-marks > $OUT/marks.json 2> $OUT/marks.err
python3 bench/graph_marks.py $OUT/marks.json --top 12 > $OUT/marks.txt; head -16 $OUT/marks.txt
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
bash bench/ab_arms.sh --passes 3 --timeout 90 $m /tmp/ab "$BA" \
  def='' sa0='MEMRA_CUDA_ATTN_STAGE_ALL=0' ca0='MEMRA_CUDA_HC_COMB_APART=0' off='MEMRA_CUDA_ATTN_STAGE_ALL=0 MEMRA_CUDA_HC_COMB_APART=0' > $OUT/ab.txt 2>&1
python3 -c 'import json,sys; [print(f.split("/")[-1], [x["logits_xxh3"][:12] for x in json.load(open(f))["decode"]]) for f in sys.argv[1:]]' /tmp/ab/*1.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; tail -45 $OUT/ab.txt; el
