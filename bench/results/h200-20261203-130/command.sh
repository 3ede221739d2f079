# Run 130 (branch qnorm-fold): the decode step's q_norm folded into wq_b's and the indexer's wq_b's
# blocks (LinearArgs::norm_weight: each block normalises q_lora into shared memory with norm_row's
# arithmetic). ops linear on this tree and under a planted library (the fold drops the norm's
# weights), the backend on the four fixtures, A/B two passes (def vs MEMRA_CUDA_QNORM_FOLD=0).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  timeout 90 $t ops --only linear --seed 130 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -3 | sed "s/^/linear: /"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only linear --seed 130 2>&1 | grep -E "^FAIL|checks" | cut -c1-160 | tail -8 | sed "s/^/planted linear: /"
  for f in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$f 2>&1 | tail -1 | sed "s/^/backend $f: /"; done; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' qn0='MEMRA_CUDA_QNORM_FOLD=0')
BA="bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 2 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^batch/p' | head -14
python3 bench/graph_marks.py /tmp/ab/def1.json --lines decode --top 40 2>&1 | grep -E "decode 2048|wq_b|q_norm" | head -8; el
