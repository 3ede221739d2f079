# Run 180 (2a792eb): the large expert groups in passes of 2 or 4 rows, A/B (`new`: the default,
# the 8-row path; `p2`/`p4`: MEMRA_CUDA_MOE_PASS=2|4). First the GPU's ops test of the experts
# (one list == two lists == the large list in 4- and 2-row passes, by bits), then `memra bench
# --timeline` at 2 layers, batches 8/32/64 and verify 6/16, arms interleaved, two passes. With the
# seconds left: ncu (--clock-control none) of the experts' stage kernels at batch 64, one CSA layer,
# under p2 (does the large list now stream near the small list's 85%?).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 120 $t ops --only moe > $OUT/ops-moe.txt 2>&1; echo "ops moe rc=$?"; tail -4 $OUT/ops-moe.txt; el
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 2 --timeout 60 --sites experts_fused $m /tmp/ab "$BA" \
  new='' p2='MEMRA_CUDA_MOE_PASS=2' p4='MEMRA_CUDA_MOE_PASS=4' > $OUT/ab.txt 2>&1
tail -40 $OUT/ab.txt; el
tar czf $OUT/ab.tar.gz -C /tmp ab
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
left=$(( ${LIMIT:-200} - ( $(date +%s) - T0 ) - 8 ))
if [ -n "$NCU" ] && [ $left -gt 25 ]; then
  MEMRA_CUDA_MOE_PASS=2 timeout $left $NCU --clock-control none --kernel-name-base demangled -k regex:moe_stage --launch-count 24 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    -o /tmp/moe $m bench --layers C --contexts 2048 --batches 64 --verify 6 \
    --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu.err
  echo "ncu rc=$?"; tail -3 /tmp/ncu.err
  $NCU -i /tmp/moe.ncu-rep --page details > /tmp/moe-details.txt 2>&1
  xz -9 < /tmp/moe-details.txt > $OUT/moe-details.txt.xz
  grep -E "moe_stage|Duration|DRAM Throughput|Grid Size|Achieved Occ|Registers Per" /tmp/moe-details.txt | head -60
fi
el
