# Run 149: the second review's mends (attention_fast.cu's softmax row tables in the dynamic shared
# memory fast_smem sizes, so attention_fast_ok needs no hand-kept slack; embed_head.cu's 8-byte
# four-value store written once) under ops attention and moe, then one bench prefill line.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
for g in attention moe; do timeout 120 $t ops --only $g --seed 149 2>&1 | grep -E "^FAIL|checks|cuda-fast|swiglu_convert" | cut -c1-170 | sed "s/^/$g: /"; done; el
timeout 60 $m bench --contexts 2048 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 5 2>&1 | grep -E "prefill" | head -2; el
