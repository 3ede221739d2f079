# Run 131: where the cluster attention's warps stall. ncu (full set + source counters, clocks
# uncontrolled) of the decode row's attention_cluster_kernel on a CSA-only model at 2k (640 keys),
# then the SASS lines with the most stall samples and the kernel's memory / scheduler sections.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,clocks.mem --format=csv > $OUT/smi.txt 2>&1
timeout 300 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_cluster' --launch-count 3 \
  --set full --import-source no -o $OUT/attn $m bench --layers CC --contexts 2048 --batches 8 --verify 6 \
  --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
echo "ncu rc=$? $(el)"
$NCU -i $OUT/attn.ncu-rep --page details > $OUT/details.txt 2>&1
$NCU -i $OUT/attn.ncu-rep --page source --csv --print-source sass > $OUT/source.csv 2>&1
echo "pages rc=$? $(el)"; ls -la $OUT
grep -E "attention_cluster|Duration|Grid Size|Warp Cycles Per Issued|L2 Hit|L1/TEX Hit|Mem Busy|Max Bandwidth|DRAM Through|Issued Warp|No Eligible|Stall|Achieved Occ" $OUT/details.txt | head -80
head -c 600 $OUT/source.csv; echo
xz -T4 $OUT/source.csv; xz -T4 $OUT/attn.ncu-rep; ls -la $OUT
