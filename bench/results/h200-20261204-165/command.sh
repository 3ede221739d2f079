# Run 165: tools/gpu-check.sh's racecheck ops step as it now runs (tools/racecheck.sh: every op group
# at once, cuBLAS's nvjet hazards told apart from memra's), on the tree of run 163.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
pids=(); for g in linear norm mhc topk compressor attention moe synthetic packed; do
  timeout 200 bash tools/racecheck.sh "$s" $t ops --quick --only $g --seed 165 > /tmp/race-$g.txt 2>&1 & pids+=($!); done
rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
echo "racecheck ops --quick via tools/racecheck.sh rc=$rc"
for g in linear norm mhc topk compressor attention moe synthetic packed; do
  echo "$g: $(grep -E 'RACECHECK SUMMARY|checks|racecheck.sh' /tmp/race-$g.txt | tr '\n' ' ' | cut -c1-260)"; done; el
cat /tmp/race-*.txt > $OUT/racecheck.txt
