# Run 221 (any card; on an H200 run 220's branch first): where a decode step's wall time goes, and
# two host-path forms against the default. The 2-layer step's wall time holds ~40 us that no kernel
# mark covers (run 217, H100: step 572 us, the marks' span 538 us): the host's work, the plan's
# copy, the graph launch, the logits copies and the wake-up after them. The phases probe
# (ForwardProbes::phases, in every decode / verify line as phases_us) splits it; the arms:
#   plan  MEMRA_CUDA_PLAN_IN_GRAPH=1   the plan's H2D copy as the graph's first node
#   pin   MEMRA_CUDA_PINNED_LOGITS=1   the logits back through pinned staging, not pageable memory
#   both  the two together
# First the backend suite on tiny (its new host-path check compares each form with the default by
# bits on the GPU).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
timeout 150 "$t" backend models/tiny --quick > "$OUT/backend-tiny.txt" 2>&1
echo "backend tiny rc=$?, $(grep -c '^ok' "$OUT/backend-tiny.txt") ok, $(grep -c '^FAIL' "$OUT/backend-tiny.txt") FAIL"; grep -E 'host path' "$OUT/backend-tiny.txt" | head -1
tail -3 "$OUT/backend-tiny.txt"
el
if [[ $gpu == *H200* ]]; then
  v4_bench 40
  marks_bench
fi
passes=5
[[ $(left) -lt 200 ]] && passes=3
[[ $(left) -lt 100 ]] && { echo "no time left for the A/B"; exit 0; }
AB_ARGS="bench --json --contexts 2048 --batches 8 --verify 6,16 --steps 8 --snapshot-gib 0.05 --prefill 64 --reps 5" \
  ab_linear $passes base='' plan='MEMRA_CUDA_PLAN_IN_GRAPH=1' pin='MEMRA_CUDA_PINNED_LOGITS=1' \
  both='MEMRA_CUDA_PLAN_IN_GRAPH=1 MEMRA_CUDA_PINNED_LOGITS=1'
