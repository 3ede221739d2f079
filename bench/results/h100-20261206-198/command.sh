# Run 198: the large list's empty blocks. Arms: base (a0c3e54's library: one block row per possible
# group, no loop; carried as build-gpu-pack/base), loop (e7b099b: the stride loop, grid as before),
# b64 / b32 (MEMRA_CUDA_MOE_LARGE_BLOCKS=64 / 32). First ops moe on the GPU with the cap at 3 (every
# block several groups, by bits); then `memra bench --timeline` at 2 layers, batches 32/64, verify
# 16, arms interleaved, three passes (the experts' sites summed per measure).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
MEMRA_CUDA_MOE_LARGE_BLOCKS=3 timeout 60 $t ops --only moe > $OUT/ops-moe.txt 2>&1; echo "ops moe (cap 3) rc=$? $(tail -1 $OUT/ops-moe.txt)"
lib_arm base
el
BA="bench --json --timeline --contexts 2048 --batches 32,64 --verify 16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 --sites experts_fused $m /tmp/ab "$BA" \
  base='bin=/tmp/base/bin' loop='' b64='MEMRA_CUDA_MOE_LARGE_BLOCKS=64' b32='MEMRA_CUDA_MOE_LARGE_BLOCKS=32' > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | grep -v "^prefill\|tok/s (cuda-fast)" | head -40
tar czf $OUT/ab.tar.gz -C /tmp ab
el
