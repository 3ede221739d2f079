# Run 119: (1) norm_rope a warp per segment for rounds of 1024+ segments (norm_rope_warp_kernel, the
# block's sums replayed in block_sum<256>'s order; MEMRA_CUDA_NORM_WARP=0: a block each): run 118's
# prefill timeline had the query heads' norm+RoPE at 0.39 ms twice. (2) The Sinkhorn apart from
# hc_pre (hc_comb after it on the same stream) for rounds of 64+ rows without side streams
# (MEMRA_CUDA_HC_COMB_ROWS=0: inside hc_pre as before): hc_pre still 0.647 ms four times a prefill.
# ops norm and mhc on this tree, ops norm under a planted library (the block sum's second stage
# added in a row: other bits, within the CPU bound), A/B three passes, then one prefill's timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in norm mhc; do timeout 90 $t ops --only $g --seed 119 2>&1 | grep -E "^FAIL|checks|segments" | cut -c1-200 | tail -14 | sed "s/^/$g: /"; done
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only norm --seed 119 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -14 | sed "s/^/planted norm: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt | tail -34
ARMS=(def='' nw0='MEMRA_CUDA_NORM_WARP=0' cr0='MEMRA_CUDA_HC_COMB_ROWS=0' both0='MEMRA_CUDA_NORM_WARP=0 MEMRA_CUDA_HC_COMB_ROWS=0')
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6 --snapshot-gib 0.05 --prefill 2048 --reps 3"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,$p' | head -80; el
timeout 60 $m bench --timeline --json --contexts 2048 --batches 64 --verify 6 --prefill 2048 --reps 1 --steps 2 --snapshot-gib 0.05 > $OUT/timeline.json 2> /dev/null
python3 bench/timeline.py $OUT/timeline.json --top 40 > $OUT/timeline.txt 2>&1
sed -n '/prefill/,/^$/p' $OUT/timeline.txt | head -50; el
