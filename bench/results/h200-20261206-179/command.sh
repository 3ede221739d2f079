# Run 179 (fc39185): first an A/B of 16 heads a block for the many-row attention (`new`: the
# default, 4 heads from 24 rows and 8 from 64; `h16`: MEMRA_CUDA_ATTN_HEADS=16), `memra bench
# --timeline` at 2 layers, arms interleaved, three passes (~20 s). Then the whole tools/gpu-check.sh
# (GPU_CHECK_FRESH=1) in check.tar.gz: issue 13's table on an H200 (the last whole H200 table was
# run 173's). With the seconds left: ncu (--clock-control none) of the exact experts' stage kernels
# at batch 64 on one CSA layer: why batch 64's experts take 1.22-1.25x their bytes.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
BA="bench --json --timeline --contexts 2048 --batches 32,64 --verify 6 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites '^[CH]:attention$' $m /tmp/ab "$BA" \
  new='' h16='MEMRA_CUDA_ATTN_HEADS=16' > $OUT/ab.txt 2>&1
grep -A8 "^batch" $OUT/ab.txt; el
tar czf $OUT/ab.tar.gz -C /tmp ab
LIMIT=$(( ${LIMIT:-560} - 60 )) whole_check 60
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 8 ))
if [ -n "$NCU" ] && [ $left -gt 25 ]; then
  timeout $left $NCU --clock-control none --kernel-name-base demangled -k regex:moe_stage --launch-count 24 \
    --section SpeedOfLight --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
    --section WarpStateStats -o /tmp/moe $m bench --layers C --contexts 2048 --batches 64 --verify 6 \
    --steps 1 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2> /tmp/ncu.err
  echo "ncu rc=$?"; tail -3 /tmp/ncu.err
  $NCU -i /tmp/moe.ncu-rep --page details > /tmp/moe-details.txt 2>&1
  xz -9 < /tmp/moe-details.txt > $OUT/moe-details.txt.xz
  grep -E "moe_stage|Duration|DRAM Throughput|Grid Size|Achieved Occ|Registers Per" /tmp/moe-details.txt | head -60
fi
el
