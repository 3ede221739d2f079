# Run 212: the final code of session 59 (2cf6fd9: run 210's linear rule; the 16-row form removed).
# ops linear by bits; racecheck backend tiny --race (the whole check's last step, cut by the call's
# limit in runs 209-211); then ncu (--clock-control none) of the rows kernel at 8 and 16 rows
# (`bench --layers C --batches 1 --verify 8,16`: its only multi-row linears), to read what bounds
# it at 16 rows (50 us for wq_b against 31.6 at 8): details with every body item, the raw metrics.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits linear
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$san" ]; then
  timeout 230 bash tools/racecheck.sh "$san" "$t" backend models/tiny --race > "$OUT/racecheck-backend-tiny.txt" 2>&1
  echo "racecheck backend tiny --race rc=$? $(grep -E 'RACECHECK SUMMARY|checks,' "$OUT/racecheck-backend-tiny.txt" | tail -2 | tr '\n' ' ')"
else echo "no compute-sanitizer"; fi
el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [ -n "$NCU" ]; then
  timeout 150 "$NCU" --clock-control none --kernel-name-base demangled -k regex:linear_exact_rows_kernel --launch-count 40 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats \
    --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
    --section InstructionStats -o /tmp/rows "$m" bench --layers C --contexts 2048 --batches 1 --verify 8,16 --steps 1 \
    --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu-rows.err
  echo "ncu rc=$?"; tail -2 /tmp/ncu-rows.err
  "$NCU" -i /tmp/rows.ncu-rep --page details --print-details all > /tmp/rows.txt 2>&1
  "$NCU" -i /tmp/rows.ncu-rep --page raw --csv > /tmp/rows-raw.csv 2>&1
  xz -9 < /tmp/rows.txt > "$OUT/rows-details.txt.xz"; xz -9 < /tmp/rows-raw.csv > "$OUT/rows-raw.csv.xz"
  grep -E "linear_exact_rows_kernel|Grid Size|^ +Duration|Issue Slots Busy|Warp Cycles Per Issued|L2 Cache Throughput|DRAM Throughput|Compute \(SM\) Throughput|Achieved Occupancy" /tmp/rows.txt \
    | sed 's/(LinearArgs).*Stream/ Stream/' | head -120
else echo "no ncu"; fi
el
