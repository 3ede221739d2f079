# Run 128: the shared expert's w3 beside its w1 (MEMRA_CUDA_SHARED_SPLIT=1, on the attention
# compressor's idle gate stream) and its swiglu + w2 at the highest launch priority
# (MEMRA_CUDA_SHARED_PRIORITY=1): run 126's verify-6 marks had w3 waiting behind the routed experts
# (ended 290 us after w1) and the combine 16 us after the experts for w2. backend tiny-bf16 under
# both switches (the bits), A/B three passes with graph marks.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1
  MEMRA_CUDA_SHARED_SPLIT=1 MEMRA_CUDA_SHARED_PRIORITY=1 timeout 120 $t backend models/tiny-bf16 2>&1 | tail -1 | sed "s/^/backend split+prio: /"
  MEMRA_CUDA_SHARED_SPLIT=1 MEMRA_CUDA_SHARED_PRIORITY=1 timeout 120 $t backend models/tiny-fp8 2>&1 | tail -1 | sed "s/^/backend fp8 split+prio: /"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
ARMS=(def='' split='MEMRA_CUDA_SHARED_SPLIT=1' prio='MEMRA_CUDA_SHARED_PRIORITY=1' both='MEMRA_CUDA_SHARED_SPLIT=1 MEMRA_CUDA_SHARED_PRIORITY=1')
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 --timeout 120 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^prefill/p' | head -80; el
