# Run 219 (any card; the first branch needs an H200): the one-row GEMV kernel in blocks of fewer
# warps where 8 leave SMs idle (one_row_warps: the decode router's 256 outputs in 256 one-warp
# blocks instead of 32 of 8), by bits on the GPU and timed against the form before (=8).
# On an H200 first (run 218's branch, withdrawn into this one): the v4 bench of the final code with
# transformers on the issue's card, then the graph marks of decode at 2k, batch 8 and verify 6 / 16,
# both with MEMRA_CUDA_LINEAR_ONE_ROW_WARPS=8, so that they read the kernels of run 214's table.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits linear
if [[ $gpu == *H200* ]]; then
  export MEMRA_CUDA_LINEAR_ONE_ROW_WARPS=8
  v4_bench 40
  timeout 90 "$m" bench --json --contexts 2048 --batches 8 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 \
    --graph-marks > /tmp/marks.json 2> "$OUT/marks.err"
  echo "marks rc=$?"
  python3 bench/graph_marks.py /tmp/marks.json --lines decode,verify,batch --top 40 > "$OUT/marks.txt" 2>&1
  xz -9 < /tmp/marks.json > "$OUT/marks.json.xz"
  grep -E "^(decode|verify|batch)" "$OUT/marks.txt" | head -8
  unset MEMRA_CUDA_LINEAR_ONE_ROW_WARPS
  el
fi
passes=5
[[ $(left) -lt 300 ]] && passes=3
[[ $(left) -lt 150 ]] && { echo "no time left for the A/B"; exit 0; }
AB_SITES='router|weights_proj|wkv|wq_a|compressor' ab_linear $passes base='' wide='MEMRA_CUDA_LINEAR_ONE_ROW_WARPS=8'
