# Run 222 (any card): the round's way in and out as kernels (round_io.cu) against the copies. Run
# 221 (H100) put 7.5 us of a decode step in the plan's H2D copy before the graph and 10.0 us in the
# logits copies after it (the last row's D2D, the D2H into pinned staging). fetch_plan (the plan read
# from pinned memory by the graph's first kernel) and logits_out (the head moves each logit row to
# the destinations the plan names) take both into the graph. Arms:
#   base    the defaults: both kernels
#   copies  MEMRA_CUDA_PLAN_FETCH=0 MEMRA_CUDA_LOGITS_OUT=0   run 221's pin arm, the form before
#   fetch   MEMRA_CUDA_LOGITS_OUT=0   the plan kernel only
#   out     MEMRA_CUDA_PLAN_FETCH=0   the logits kernel only
# First the ops group with their checks (and under memcheck: the kernels read and write pinned host
# memory) and the backend suite on tiny (the host-path check compares each form by bits). On an H200
# then run 220's v4 bench with transformers and the graph marks (the final code on the issue's card).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits moe
grep -E 'fetch_plan|logits_out' "$OUT/ops-moe.txt"
memcheck_ops moe
timeout 150 "$t" backend models/tiny --quick > "$OUT/backend-tiny.txt" 2>&1
echo "backend tiny rc=$?, $(grep -c '^ok' "$OUT/backend-tiny.txt") ok, $(grep -c '^FAIL' "$OUT/backend-tiny.txt") FAIL"; grep -E 'host path|PDL' "$OUT/backend-tiny.txt" | head -2
el
passes=5
[[ $(left) -lt 200 ]] && passes=3
if [[ $(left) -gt 100 ]]; then
  AB_ARGS="bench --json --contexts 2048 --batches 8 --verify 6,16 --steps 8 --snapshot-gib 0.05 --prefill 64 --reps 5" \
    ab_linear $passes base='' copies='MEMRA_CUDA_PLAN_FETCH=0 MEMRA_CUDA_LOGITS_OUT=0' fetch='MEMRA_CUDA_LOGITS_OUT=0' \
    out='MEMRA_CUDA_PLAN_FETCH=0'
fi
if [[ $gpu == *H200* && $(left) -gt 340 ]]; then
  v4_bench 40
  marks_bench
fi
