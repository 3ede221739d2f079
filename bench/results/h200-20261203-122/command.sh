# Run 122: hc_mix_rows_kernel's partials of 4 rows × 4 values through one warp_sum_many, the rows'
# x·r staged once a block as float4 rows per lane (run 121's ncu: 311 us, issue-bound); hc_post
# and hc_post_moe on a (D / 256, rows) grid with the row's post and comb in shared memory (ncu run
# 121: 128 / 195 us at 45-52% of DRAM peak, 70% of the SM's issue).
# ops mhc, moe and linear (the hc_post epilogue) on this tree, ops mhc under a planted library (the
# rows kernel's chain reversed; comb staged transposed), A/B three passes, one prefill's timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in mhc moe linear; do timeout 90 $t ops --only $g --seed 122 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -4 | sed "s/^/$g: /"; done
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only mhc --seed 122 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -24 | sed "s/^/planted mhc: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' mix0='MEMRA_CUDA_HC_MIX_ROWS=0')
BA="bench --json --contexts 2048 --batches 8,64 --verify 6 --snapshot-gib 0.05 --prefill 2048 --reps 3"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -50; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 64 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 30 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -40; el
