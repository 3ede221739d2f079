# Run 191: the streamed one-row linear (linear_one_row_stream_kernel: a grid of one wave, each warp
# walking its outputs' weights two chunks of 4 lane steps ahead) against linear_one_row_kernel, and
# session 50's review mends on a GPU. First the GPU's ops linear (every form by bits, the streamed
# one among them) and hash groups, memcheck of ops linear, backend tiny (decode through the new
# kernel, the class-hash check), the bandwidth test (0244ea2's helper); then `memra bench
# --timeline` at 2 layers, decode 2k / 32k, batch 8, verify 6, arms interleaved (off: the old
# kernel; on: the default, one wave; w2: two waves), two passes.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader
timeout 60 $t ops --only linear > $OUT/ops-linear.txt 2>&1; echo "ops linear rc=$? $(tail -1 $OUT/ops-linear.txt)"
timeout 60 $t ops --only hash > $OUT/ops-hash.txt 2>&1; echo "ops hash rc=$? $(tail -1 $OUT/ops-hash.txt)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$SAN" ] && { timeout 90 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $t ops --quick --only linear > $OUT/memcheck-linear.txt 2>&1; echo "memcheck ops linear rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck-linear.txt | tail -1)"; }
el
timeout 120 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
timeout 60 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth.txt 2>&1; echo "bandwidth rc=$?"
grep -E "^state:|class hashes on|alone, on the device|snapshot >=|restore >=" $OUT/bandwidth.txt
el
BA="bench --json --timeline --contexts 2048,32768 --batches 8 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 2 --timeout 60 --sites 'wq_b|wo_a|wo_b' $m /tmp/ab "$BA" \
  off='MEMRA_CUDA_LINEAR_STREAM=0' on='' w2='MEMRA_CUDA_LINEAR_STREAM=2' > $OUT/ab.txt 2>&1
tail -30 $OUT/ab.txt
tar czf $OUT/ab.tar.gz -C /tmp ab
el
