# Run 138: ncu of the kept cluster attention (972ab0f) at one decode row, 640 keys: where its
# time goes now (stall samples by region), for the next session's baseline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k 'regex:attention_cluster' --launch-count 2 --set full --import-source no -o $OUT/attn $m bench --layers CC --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > $OUT/ncu-run.txt 2>&1
$NCU -i $OUT/attn.ncu-rep --page source --csv --print-source sass > $OUT/ncu-source.csv 2>&1; $NCU -i $OUT/attn.ncu-rep --page details > $OUT/ncu-details.txt
grep -E "Duration|Registers Per|Dynamic Shared" $OUT/ncu-details.txt; xz -T4 $OUT/ncu-source.csv; rm -f $OUT/attn.ncu-rep; el
