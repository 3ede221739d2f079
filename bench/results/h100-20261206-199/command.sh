# Run 199: the large expert list's up kernel with four intermediate indices a warp at one block an
# SM (branch up2's second commit, the pack, arm `up4`) and with two at two blocks an SM (0b2edf8 = main
# 2be75f7 + 8887220's kernels/moe.cu, arm `up2`) against main's library (arm `base`). First ops moe
# by bits in each arm and memcheck of up4's, backend tiny (batches against running alone); then `memra bench
# --timeline` at 2 layers, decode 2k, batches 8/32/64, verify 6/16, arms interleaved, three passes
# (the experts' sites summed per measure). Last, ncu (--clock-control none) of the first 12 moe_stage
# launches of `bench --layers C --batches 64` in arms up4 and base.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
lib_arm base; lib_arm up2
timeout 60 $t ops --only moe > $OUT/ops-moe.txt 2>&1; echo "ops moe up4 rc=$? $(tail -1 $OUT/ops-moe.txt)"
LD_LIBRARY_PATH=/tmp/up2/bin timeout 60 $t ops --only moe > $OUT/ops-moe-up2.txt 2>&1; echo "ops moe up2 rc=$? $(tail -1 $OUT/ops-moe-up2.txt)"
SAN=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
[ -n "$SAN" ] && { timeout 90 $SAN --tool memcheck --error-exitcode 9 --print-limit 20 $t ops --quick --only moe > $OUT/memcheck-moe.txt 2>&1; echo "memcheck ops moe rc=$? $(grep -E 'ERROR SUMMARY' $OUT/memcheck-moe.txt | tail -1)"; }
timeout 90 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 90 --sites experts_fused $m /tmp/ab "$BA" \
  up4='' up2='bin=/tmp/up2/bin' base='bin=/tmp/base/bin' > $OUT/ab.txt 2>&1
grep -v "^arm" $OUT/ab.txt | head -50
tar czf $OUT/ab.tar.gz -C /tmp ab
el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
for arm in up4 base; do
  bin=$P/bin; [ $arm != up4 ] && bin=/tmp/$arm/bin
  [ -n "$NCU" ] || break
  LD_LIBRARY_PATH=$bin timeout 100 $NCU --clock-control none --kernel-name-base demangled -k regex:moe_stage --launch-count 12 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats -o /tmp/moe-$arm $bin/memra bench --layers C --contexts 2048 --batches 64 --verify 6 \
    --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu-$arm.err
  echo "ncu $arm rc=$?"; tail -2 /tmp/ncu-$arm.err
  $NCU -i /tmp/moe-$arm.ncu-rep --page details > /tmp/moe-$arm.txt 2>&1
  xz -9 < /tmp/moe-$arm.txt > $OUT/moe-details-$arm.txt.xz
  grep -E "moe_stage|Duration|DRAM Throughput|Registers Per|Achieved Occ|Warp Cycles Per Issued|Local" /tmp/moe-$arm.txt | sed 's/(ExpertsArgs.*Stream/ Stream/' | head -60
  el
done
