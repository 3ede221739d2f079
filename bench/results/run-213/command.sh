# Run 213: ncu (--clock-control none) of the rows kernel at 16 rows, the reading run 212's 40 launches
# did not reach: `bench --layers C --batches 1 --verify 16`, the first 8 rows-kernel launches (the
# 64-row small sites) skipped, the next 14 (verify 16's rounds) profiled; details with every body
# item and the raw metrics. Code of 2cf6fd9 (the final kernels).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [ -n "$NCU" ]; then
  timeout 110 "$NCU" --clock-control none --kernel-name-base demangled -k regex:linear_exact_rows_kernel --launch-skip 8 \
    --launch-count 14 --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section InstructionStats -o /tmp/rows16 \
    "$m" bench --layers C --contexts 2048 --batches 1 --verify 16 --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 \
    --json > /dev/null 2> /tmp/ncu-rows16.err
  echo "ncu rc=$?"; tail -2 /tmp/ncu-rows16.err
  "$NCU" -i /tmp/rows16.ncu-rep --page details --print-details all > /tmp/rows16.txt 2>&1
  "$NCU" -i /tmp/rows16.ncu-rep --page raw --csv > /tmp/rows16-raw.csv 2>&1
  xz -9 < /tmp/rows16.txt > "$OUT/rows16-details.txt.xz"; xz -9 < /tmp/rows16-raw.csv > "$OUT/rows16-raw.csv.xz"
  grep -E "linear_exact_rows_kernel|Grid Size|^ +Duration|Issue Slots Busy|L2 Cache Throughput|DRAM Throughput" /tmp/rows16.txt \
    | sed 's/(LinearArgs).*Stream/ Stream/' | head -90
else echo "no ncu"; fi
el
