# Run 107: the streamed form of the few-row exact linear (linear_exact_stream_kernel: 2-15 rows of
# a large 16-bit matrix, cp.async ring of lane steps, persistent blocks). ops linear under the
# library and under the planted one (each block's second tile is its neighbour's: tile += 1), the
# whole ops and backend tiny; then A/B three passes with graph marks: def (streamed), s0
# (MEMRA_CUDA_LINEAR_STREAM=0: the tiled kernel as before), r6 (a ring of 6, one block per SM), k2
# (two outputs a warp everywhere), s32 (the streamed form up to 32 rows: verify 16, batch 32), one
# (one-row rounds of the large matrices streamed too: decode).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 120 $t ops --only linear --seed 107 2>&1 | grep -E "stream|FAIL|checks" | cut -c1-220
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 120 $t ops --only linear --seed 107 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -8
  timeout 200 $t ops --seed 107 2>&1 | grep -E "FAIL|checks" | tail -4
  timeout 60 $t backend tiny 2>&1 | tail -2; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" def='' s0='MEMRA_CUDA_LINEAR_STREAM=0' r6='MEMRA_CUDA_LINEAR_STREAM_RING=6' \
  k2='MEMRA_CUDA_LINEAR_STREAM_KO=2' s32='MEMRA_CUDA_LINEAR_STREAM=32' one='MEMRA_CUDA_LINEAR_STREAM_ONE=1' > $OUT/ab.txt 2>&1
for a in def s0 r6 k2 s32 one; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -70; el
