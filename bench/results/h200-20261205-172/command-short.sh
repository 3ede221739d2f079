# Run 172 (short form, for a call of ~4 minutes; the device refused four starts): what one layer more
# costs (memra bench at --layers CH and CHCH, bench/marginal.py), ops attention under racecheck (the
# indexer's staging as mended twice, the 16-head form gone), a second marginal pass, then issue 13's
# table by bench/gpu_bench.sh (with the tau of the trained tiny pair and the projected speculative
# lines) if two minutes are left. LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
left() { echo $(( ${LIMIT:-240} - ( $(date +%s) - T0 ) - 5 )); }
MA="--json --contexts 2048 --batches 8,32 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 3"
marginal() {
  for layers in CH CHCH; do
    [ $(left) -gt 30 ] || return
    timeout $(( $(left) < 45 ? $(left) : 45 )) $m bench --layers $layers $MA > $OUT/marginal-$layers-$1.json 2> /tmp/marginal-$layers-$1.err
    echo "bench $layers pass $1 rc=$?"
  done
  python3 bench/marginal.py $OUT/marginal-CH-$1.json $OUT/marginal-CHCH-$1.json; el
}
marginal 1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
[ $(left) -gt 40 ] && { timeout $(( $(left) < 90 ? $(left) : 90 )) "$s" --tool racecheck --error-exitcode 9 --print-limit 20 $t ops --quick --only attention --seed 172 > $OUT/racecheck-attention.txt 2>&1
  echo "racecheck ops attention --quick rc=$?"; grep -E "RACECHECK SUMMARY|checks" $OUT/racecheck-attention.txt; el; }
marginal 2
if [ $(left) -gt 120 ]; then
  mkdir -p /tmp/b; env OUT=/tmp/b BIN=$P/bin BENCH_TIMEOUT=60 TF_TIMEOUT=$(( $(left) - 70 )) bash bench/gpu_bench.sh > /tmp/b/console.txt 2>&1
  echo "gpu_bench rc=$?"; cat /tmp/b/table.md 2>/dev/null | head -26; tar -cJf $OUT/bench.tar.xz -C /tmp/b .; el
fi
