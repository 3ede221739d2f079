# Run 196: expert groups of at most 4 rows (a0c3e54, arm `new`) against b935ed2's library (arm
# `base`: the kernels of b1c188c, groups of up to 8). First the GPU's ops moe (by bits) and memcheck
# of it, backend tiny and tiny-fp8 (batches through the new grouping, bits against running alone);
# then `memra bench --timeline` at 2 layers, decode 2k, batches 8/32/64, verify 6/16, arms
# interleaved, three passes (the experts' sites summed per measure).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
timeout 60 $t ops --only moe > $OUT/ops-moe.txt 2>&1; echo "ops moe rc=$? $(tail -1 $OUT/ops-moe.txt)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$SAN" ] && { timeout 90 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $t ops --quick --only moe > $OUT/memcheck-moe.txt 2>&1; echo "memcheck ops moe rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck-moe.txt | tail -1)"; }
for model in models/tiny models/tiny-fp8; do
  timeout 90 $t backend $model > $OUT/backend-$(basename $model).txt 2>&1; echo "backend $(basename $model) rc=$? $(tail -1 $OUT/backend-$(basename $model).txt)"
done
lib_arm base
el
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 --sites experts_fused $m /tmp/ab "$BA" \
  new='' base='bin=/tmp/base/bin' > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | head -50
tar czf $OUT/ab.tar.gz -C /tmp ab
el
