# Run 164: the sanitizer step of tools/gpu-check.sh as it now runs (racecheck with cuBLAS's nvjet
# kernels left out, every op group at once; run 163 found hazards inside nvjet only), and issue 13's
# table again (bench/gpu_bench.sh, as the whole check runs it): run 163's table read verify 6 at
# 1.479 ms where its A/B read 1.32-1.34 ms; three more verify 6 / 16 samples after it.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
pids=(); for g in linear norm mhc topk compressor attention moe synthetic packed; do
  timeout 200 "$s" --tool racecheck --kernel-name-exclude kns=nvjet --error-exitcode 9 --print-limit 30 $t ops --quick --only $g --seed 164 > /tmp/race-$g.txt 2>&1 & pids+=($!); done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
echo "racecheck ops --quick (nvjet left out) rc=$rc"
for g in linear norm mhc topk compressor attention moe synthetic packed; do
  echo "$g: $(grep -E 'RACECHECK SUMMARY|checks' /tmp/race-$g.txt | tr '\n' ' ' | cut -c1-200)"; done; el
cat /tmp/race-*.txt > $OUT/racecheck.txt
mkdir -p /tmp/b; env OUT=/tmp/b BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline bash bench/gpu_bench.sh > /tmp/b/console.txt 2>&1
echo "gpu_bench rc=$?"; cat /tmp/b/table.md | head -22; el
for i in 1 2 3; do timeout 60 $m bench --json --contexts 2048 --batches 8 --verify 6 16 --steps 4 --prefill 64 --snapshot-gib 0.05 --reps 3 > /tmp/b/verify-$i.json 2>/dev/null
  python3 -c "import json,sys; d=json.load(open(sys.argv[1])); print(' '.join('verify %d %.3f ms %.2fx experts %s' % (v['block'], v['ms'], v['ratio_to_floor'], v.get('distinct_experts_per_layer')) for v in d['verify']))" /tmp/b/verify-$i.json; done; el
tar -cJf $OUT/bench.tar.xz -C /tmp/b .
