# Run 127: the shared expert's w1 / w3 on at most N blocks beside the router and route
# (MEMRA_CUDA_SHARED_BLOCKS, linear_one_row_stride_kernel: fewer loads queued while route's one block
# waits on its own; runs 124-126: route ends with the shared linear beside it however scheduled).
# ops linear on this tree and under a planted library (the stride skips a tile); A/B three passes
# (def = none, sb32 / sb64 / sb128) with graph marks.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  timeout 90 $t ops --only linear --seed 127 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -3 | sed "s/^/linear: /"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only linear --seed 127 2>&1 | grep -E "^FAIL|checks" | cut -c1-200 | tail -8 | sed "s/^/planted linear: /"
  timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' sb32='MEMRA_CUDA_SHARED_BLOCKS=32' sb64='MEMRA_CUDA_SHARED_BLOCKS=64' sb128='MEMRA_CUDA_SHARED_BLOCKS=128')
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^verify/p' | head -40; el
