# Run 202: main at session 52's end (cf9539d; kernels 7869146, the large-list dispatch mend not yet
# run on a GPU): ops moe / linear by bits, memcheck of ops moe, backend tiny, issue 13's v4 bench
# (bench/gpu_bench.sh) as bench.tar.gz. Then the profile session 52 left as the next step: ncu
# (--clock-control none) of the first 10 linear_exact_gemm_raw_kernel launches of `bench --batches
# 64` (the 64-row exact linears), with the per-instruction stall counters (SourceCounters): details
# and the SASS source page as .xz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits moe; ops_bits linear; memcheck_ops moe
timeout 90 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
bdir=/tmp/memra-v4-bench; rm -rf $bdir; mkdir -p $bdir
OUT=$bdir BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 MARGINAL_TIMEOUT=45 BENCH_ARGS=--timeline \
  timeout 240 bash bench/gpu_bench.sh > $bdir/console.txt 2>&1; echo "v4 bench rc=$?"
tar czf $OUT/bench.tar.gz -C $bdir .
cat $bdir/table.md 2>/dev/null | head -40
el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
if [ -n "$NCU" ]; then
  timeout 150 $NCU --clock-control none --kernel-name-base demangled -k regex:linear_exact_gemm_raw --launch-count 10 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SourceCounters \
    --section ComputeWorkloadAnalysis --section InstructionStats --section MemoryWorkloadAnalysis \
    -o /tmp/lin64 $m bench --layers C --contexts 2048 --batches 64 --verify 6 --steps 1 --reps 1 --prefill 64 \
    --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu-lin.err
  echo "ncu rc=$?"; tail -2 /tmp/ncu-lin.err
  $NCU -i /tmp/lin64.ncu-rep --page details > /tmp/lin64.txt 2>&1
  $NCU -i /tmp/lin64.ncu-rep --page source --csv --print-source sass > /tmp/lin64-sass.csv 2>&1
  xz -9 < /tmp/lin64.txt > $OUT/lin64-details.txt.xz; xz -9 < /tmp/lin64-sass.csv > $OUT/lin64-sass.csv.xz
  cp /tmp/lin64.ncu-rep $OUT/ 2>/dev/null
  grep -E "linear_exact_gemm_raw|Grid Size|Duration|Registers Per|Achieved Occ|Issue Slots Busy|Warp Cycles Per Issued|Executed Ipc A|FMA|No Eligible" /tmp/lin64.txt | sed 's/(LinearArgs).*Stream/ Stream/' | head -90
else echo "no ncu"; fi
el
