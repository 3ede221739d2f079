#!/usr/bin/env bash
# bench/device_run.sh: one device call for the GPU work of issues 11 and 13, from a staging folder
# that holds build-gpu-pack/bin, tools/, bench/ and models/ (the layout of this repository):
#   1. tools/gpu-check.sh                     correctness (ops, backend, gates, bandwidth, sanitizer)
#   2. bench/gpu_bench.sh PROFILE=1           memra bench + transformers + ncu of decode/verify/batch
#   3. A/B (AB=1): memra bench with MEMRA_CUDA_HC_SPLIT=0, short
# Every log goes into one archive in $OUT (the device tool returns at most 8 files); the summary,
# the table and the plot beside it; the table and summary printed last.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
final=${OUT:-$root/device-out}
mkdir -p "$final"
W=$(mktemp -d)
mkdir -p "$W/check" "$W/bench" "$W/ab"
t0=$(date +%s)
if [[ "${CHECK:-1}" == 1 ]]; then
  OUT=$W/check GPU_CHECK_BUDGET_S=${CHECK_BUDGET:-220} bash tools/gpu-check.sh > "$W/check.log" 2>&1
  echo "gpu-check rc=$? at $(( $(date +%s) - t0 ))s"
fi
OUT=$W/bench PROFILE=${PROFILE:-1} bash bench/gpu_bench.sh > "$W/bench.log" 2>&1
echo "bench rc=$? at $(( $(date +%s) - t0 ))s"
if [[ "${SANITIZE_V4:-0}" == 1 ]]; then
  # racecheck's hazard detail on the attention site, and memcheck of the V4-Flash-geometry bench
  # (CUDA graphs, bucketed shapes, fused MoE at 256 experts: what the tiny models do not reach)
  san=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  sb=build-gpu-pack/bin
  LD_LIBRARY_PATH="$sb:${LD_LIBRARY_PATH:-}" timeout 40 "$san" --tool racecheck --racecheck-report hazard --print-limit 8 \
    "$sb/memra_cuda_test" ops --only attention --quick > "$W/racecheck-attention.txt" 2>&1
  echo "racecheck attention rc=$? at $(( $(date +%s) - t0 ))s"
  LD_LIBRARY_PATH="$sb:${LD_LIBRARY_PATH:-}" timeout "${MEMCHECK_TIMEOUT:-150}" "$san" --tool memcheck --error-exitcode 9 \
    --print-limit 20 "$sb/memra" -q bench --layers CH --contexts 2048 --batches 8 --verify 6 --prefill 256 --steps 2 \
    --reps 1 --snapshot-gib 0.05 --json > "$W/memcheck-bench.txt" 2>&1
  echo "memcheck bench (V4 geometry) rc=$? at $(( $(date +%s) - t0 ))s"; tail -3 "$W/memcheck-bench.txt"
fi
if [[ "${AB:-1}" == 1 ]]; then
  OUT=$W/ab TRANSFORMERS=0 PROFILE=0 MEMRA_CUDA_HC_SPLIT=0 \
    BENCH_ARGS="--contexts 2048 --batches 8 --verify 6 --steps 8 --reps 1 --snapshot-gib 0.05" \
    bash bench/gpu_bench.sh > "$W/ab.log" 2>&1
  echo "A/B rc=$? at $(( $(date +%s) - t0 ))s"
fi
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,power.draw --format=csv > "$W/clocks.txt" 2>&1
tar czf "$final/device-logs.tgz" -C "$W" .
cp "$W/check/summary.txt" "$final/gpu-check-summary.txt" 2>/dev/null
cp "$W/bench/table.md" "$W/bench/decode_vs_context.png" "$W/bench/memra-bench.json" "$W/bench/transformers.json" "$final/" 2>/dev/null
cp "$W/bench/ncu-summary.txt" "$final/" 2>/dev/null
echo "=== A/B (hc split off)"; grep -E '"ms_per_layer_token"|"step_ms"' "$W/ab/memra-bench.json" 2>/dev/null | head -4
echo "=== ncu"; head -60 "$W/bench/ncu-summary.txt" 2>/dev/null
echo "=== bench"; tail -45 "$W/bench.log"
echo "=== gpu-check"; cat "$W/check/summary.txt" 2>/dev/null
echo "total $(( $(date +%s) - t0 ))s"
