# Run 178: attention_heads_kernel's four-keys form (4d22045, 7e3b51c) on the GPU. First the ops test
# of attention (the CUDA kernel against its CPU twin by bits; heads 1, 2, 4, 8 a block against the
# default launch); then `memra bench --timeline` at 2 layers (CSA + HCA), arms interleaved, three
# passes: `new` (the four-keys form, default heads), `onekey` (MEMRA_CUDA_ATTN_HEADS_KEYS=0, the old
# one-key form), `heads8` (four keys, 8 heads a block), the C:/H:attention sites summed per measure.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader
  timeout 120 $t ops --only attention --seed 178; echo "ops attention rc=$?"; el; } > $OUT/tests.txt 2>&1
cat $OUT/tests.txt | grep -vE "^  ok" | tail -40
BA="bench --json --timeline --contexts 2048 --batches 32,64 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 100 --sites '^[CH]:attention$' $m /tmp/ab "$BA" \
  new='' onekey='MEMRA_CUDA_ATTN_HEADS_KEYS=0' heads8='MEMRA_CUDA_ATTN_HEADS=8' > $OUT/ab.txt 2>&1
cat $OUT/ab.txt; el
tar czf $OUT/ab.tar.gz -C /tmp ab
