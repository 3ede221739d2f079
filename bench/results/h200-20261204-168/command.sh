# Run 168: the sanitizer on the tree of run 167 (the whole check last ran at run 163): memcheck of
# every op group (--quick), racecheck through tools/racecheck.sh of the groups whose kernels changed
# since (mhc, moe, attention), memcheck of the backend test on tiny-bf16 (cuda-fast's batched
# experts at 128+ rows).
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 100 $s --tool memcheck --error-exitcode 9 --print-limit 30 $t ops --quick --seed 168 > /tmp/memcheck-ops.txt 2>&1
echo "memcheck ops --quick rc=$? $(grep -E 'ERROR SUMMARY' /tmp/memcheck-ops.txt | tail -1)"; el
pids=(); for g in mhc moe attention; do
  timeout 150 bash tools/racecheck.sh "$s" $t ops --quick --only $g --seed 168 > /tmp/race-$g.txt 2>&1 & pids+=($!); done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
echo "racecheck mhc moe attention rc=$rc"
for g in mhc moe attention; do echo "$g: $(grep -E 'RACECHECK SUMMARY|checks|racecheck.sh' /tmp/race-$g.txt | tr '\n' ' ' | cut -c1-220)"; done; el
timeout 100 $s --tool memcheck --error-exitcode 9 --print-limit 30 $t backend models/tiny-bf16 --quick > /tmp/memcheck-backend.txt 2>&1
echo "memcheck backend tiny-bf16 --quick rc=$? $(grep -E 'ERROR SUMMARY|checks' /tmp/memcheck-backend.txt | tr '\n' ' ' | cut -c1-200)"; el
cat /tmp/memcheck-ops.txt /tmp/race-*.txt /tmp/memcheck-backend.txt > $OUT/sanitizer.txt
