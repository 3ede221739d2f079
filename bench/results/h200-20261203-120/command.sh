# Run 120: hc_mix_rows_kernel's staging of the rows' stream values with every load in flight (a
# rolled loop waited a round trip per value; run 119's timeline still had hc_pre at 0.63 ms), and
# embed_rows one block per row (an element-wise loop with 64-bit divisions: 0.16 ms a prefill).
# ops mhc and moe (a new embed_rows check) on this tree, ops moe under a planted library (the last
# stream left unwritten), A/B three passes (def vs the one-row-a-block mix), one prefill's timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in mhc moe; do timeout 90 $t ops --only $g --seed 120 2>&1 | grep -E "^FAIL|checks|embed" | cut -c1-200 | tail -6 | sed "s/^/$g: /"; done
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only moe --seed 120 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -6 | sed "s/^/planted moe: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' mix0='MEMRA_CUDA_HC_MIX_ROWS=0')
BA="bench --json --contexts 2048 --batches 8,64 --verify 6 --snapshot-gib 0.05 --prefill 2048 --reps 3"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -50; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 64 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 24 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -32; el
