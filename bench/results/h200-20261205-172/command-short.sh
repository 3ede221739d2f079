# Run 172 (short form, for a call of ~5 minutes): ops attention under racecheck (the indexer's staging
# as mended twice, the 16-head form gone), issue 13's table by bench/gpu_bench.sh as the whole check
# runs it (with the tau of the trained tiny pair and the projected speculative lines), then what one
# layer more costs (memra bench at --layers CH and CHCH, bench/marginal.py) with the seconds left.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 100 "$s" --tool racecheck --error-exitcode 9 --print-limit 20 $t ops --quick --only attention --seed 172 > $OUT/racecheck-attention.txt 2>&1
echo "racecheck ops attention --quick rc=$?"; grep -E "RACECHECK SUMMARY|checks" $OUT/racecheck-attention.txt; el
mkdir -p /tmp/b; env OUT=/tmp/b BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 bash bench/gpu_bench.sh > /tmp/b/console.txt 2>&1
echo "gpu_bench rc=$?"; cat /tmp/b/table.md | head -24; el
tar -cJf $OUT/bench.tar.xz -C /tmp/b .
MA="--json --contexts 2048 --batches 8 32 --verify 6 16 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 3"
for pass in 1 2; do for layers in CH CHCH; do
  left=$(( ${LIMIT:-300} - ( $(date +%s) - T0 ) - 5 )); [ $left -gt 30 ] || break 2
  timeout $(( left < 45 ? left : 45 )) $m bench --layers $layers $MA > $OUT/marginal-$layers-$pass.json 2> /tmp/marginal-$layers-$pass.err
  echo "bench $layers pass $pass rc=$?"; done
  python3 bench/marginal.py $OUT/marginal-CH-$pass.json $OUT/marginal-CHCH-$pass.json; done; el
