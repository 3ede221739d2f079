#!/usr/bin/env bash
# bench/gpu_bench.sh: issue 13's benchmark in one device call (on the GPU machine), after
# tools/gpu-check.sh --pack built the binaries here:
#   1. memra bench --json (V4-Flash layer geometry, seeded weights made on the GPU)
#   2. bench/transformers_bench.py on the same config, weights and token streams
#   3. memra bench at twice the layers (one layer more: bench/marginal.py), the trained tiny pair's tau
#   4. bench/compare.py: the table with memra/transformers ratios, the marginal layer, the projected
#      speculative lines and the decode-vs-context plot
#   5. (PROFILE=1) ncu, SpeedOfLight per kernel, of the exact backend's forward calls NCU_FORWARDS
#      (counted from 1: the exact prefill is 1, the 2k decode steps 2-8 without graphs and 9-15 with
#      graphs, the 6-token verify 16-17, the batch-32 steps 18-24; default 6,16,18: a decode step,
#      a verify and a batch-32 step, each launched kernel by kernel (the traced or ungraphed ones:
#      ncu's replay of the graphed step failed once in the attention kernel, 2026-11-30))
# Everything lands in $OUT; the table is printed last. NVLink multicast stays off.
set -uo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
OUT=${OUT:-$root/bench-out}
mkdir -p "$OUT"
bin=${BIN:-build-gpu-pack/bin}
export LD_LIBRARY_PATH="$bin:${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64"
layers=${LAYERS:-CH}
args=${BENCH_ARGS:-}
TF_ARGS=${TF_ARGS:-}
t0=$(date +%s)
echo "=== memra bench (t=0)"
timeout "${BENCH_TIMEOUT:-300}" "$bin/memra" bench --layers "$layers" --json --config-out "$OUT/config.json" $args > "$OUT/memra-bench.json" 2> "$OUT/memra-bench.log"
mrc=$?
echo "memra bench rc=$mrc in $(( $(date +%s) - t0 ))s"; tail -5 "$OUT/memra-bench.log"
if [[ "${TRANSFORMERS:-1}" == 1 ]]; then
  echo "=== transformers (t=$(( $(date +%s) - t0 ))s)"
  timeout "${TF_TIMEOUT:-300}" python3 bench/transformers_bench.py "$OUT/config.json" --out "$OUT/transformers.json" $TF_ARGS > "$OUT/transformers.log" 2>&1
  echo "transformers rc=$? in $(( $(date +%s) - t0 ))s"; tail -3 "$OUT/transformers.log"
fi
# One layer more: the same bench at twice the layers (decode at the first context, batches 8 and 32,
# verify 6 and 16), so that compare.py --marginal prints what a layer costs without the ends a
# 2-layer step divides over its two layers (bench/marginal.py).
if [[ -s "$OUT/memra-bench.json" && "${MARGINAL:-1}" == 1 ]]; then
  echo "=== memra bench --layers $layers$layers (t=$(( $(date +%s) - t0 ))s)"
  timeout "${MARGINAL_TIMEOUT:-120}" "$bin/memra" bench --layers "$layers$layers" --json --contexts 2048 --batches 8,32 \
    --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 2048 --reps 3 > "$OUT/memra-bench-2x.json" 2> "$OUT/memra-bench-2x.log"
  echo "memra bench 2x rc=$?"; [[ -s "$OUT/memra-bench-2x.json" ]] && python3 bench/marginal.py "$OUT/memra-bench.json" "$OUT/memra-bench-2x.json"
fi
# The trained tiny pair's speculative rounds (models/tiny-trained + its DSpark drafter) at each
# verify block the bench timed, a verify of v rows checking v − 1 drafts: bench/tau.py, memra draft
# on the exact CPU realization (the GPU's exact tokens), four fixed prompts; compare.py projects
# them onto the measured verify and decode steps (the speculative lines).
if [[ -s "$OUT/memra-bench.json" && -d models/drafters/tiny-trained-dspark && "${TAU:-1}" == 1 ]]; then
  echo "=== tau (t=$(( $(date +%s) - t0 ))s)"
  python3 bench/tau.py "$bin/memra" "$OUT/memra-bench.json" "$OUT/tau.json" 2>> "$OUT/tau.log"; echo "tau rc=$?"
  # what --rollback rerun re-runs after a partial block (1-15 rows): verify steps at ten sizes (~5 s),
  # with the host form of the speculative mark (MEMRA_CUDA_HOST_MARK=1: D2H, and H2D on a rewind), so
  # its round costs (verify[].round) are the A/B of the main bench's device mark
  MEMRA_CUDA_HOST_MARK=1 timeout 60 "$bin/memra" bench --layers "$layers" --json --contexts 2048 --batches 8 \
    --verify 2,3,4,5,6,8,10,12,14,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 3 \
    > "$OUT/memra-bench-verify.json" 2> "$OUT/memra-bench-verify.log"
  echo "memra bench (verify sizes, host mark) rc=$?"
  python3 - "$OUT/memra-bench.json" "$OUT/memra-bench-verify.json" <<'PY' || true
import json, sys
dev, host = (json.load(open(p)) for p in sys.argv[1:3])
by = lambda d: {v["block"]: v for v in d.get("verify", []) if v.get("round")}
h = by(host)
for b, v in sorted(by(dev).items()):
    if b in h:
        r, hr = v["round"], h[b]["round"]
        print(f"round costs at verify {b}: mark {r['mark_ms']:.3f} ms (device) / {hr['mark_ms']:.3f} (host), "
              f"keep {r['kept_rows']} rows {r['keep_ms']:.3f} / {hr['keep_ms']:.3f}, "
              f"journaled verify {r['journaled_ms']:.3f} vs {v['ms']:.3f} ms")
PY
fi
if [[ "${PROFILE:-0}" == 1 ]]; then
  echo "=== ncu (t=$(( $(date +%s) - t0 ))s)"
  MEMRA_CUDA_PROFILE_FORWARDS=${NCU_FORWARDS:-6,16,18} timeout "${NCU_TIMEOUT:-200}" ncu --profile-from-start off --clock-control none --section SpeedOfLight \
    --csv "$bin/memra" -q bench --layers "$layers" --contexts 2048 --batches 32 --verify 6 --steps 4 --reps 1 \
    --snapshot-gib 0.05 --json > "$OUT/ncu.csv" 2> "$OUT/ncu.log"
  echo "ncu rc=$? in $(( $(date +%s) - t0 ))s"; tail -3 "$OUT/ncu.log"
  python3 bench/ncu_summary.py "$OUT/ncu.csv" > "$OUT/ncu-summary.txt" 2>&1; head -70 "$OUT/ncu-summary.txt"
fi
if [[ -s "$OUT/transformers.json" ]]; then
  # the table, the plot, and last a one-line [bench] summary (tools/gpu-check.sh's step detail)
  python3 bench/compare.py "$OUT/memra-bench.json" "$OUT/transformers.json" --table "$OUT/table.md" --plot "$OUT/decode_vs_context.png" \
    $( [[ -s "$OUT/tau.json" ]] && echo --tau "$OUT/tau.json" ) $( [[ -s "$OUT/memra-bench-verify.json" ]] && echo --rerun-steps "$OUT/memra-bench-verify.json" ) $( [[ -s "$OUT/memra-bench-2x.json" ]] && echo --marginal "$OUT/memra-bench-2x.json" )
elif [[ -s "$OUT/memra-bench.json" ]]; then
  python3 -c "import json,sys; print(json.dumps(json.load(open(sys.argv[1])), indent=1))" "$OUT/memra-bench.json" | head -80
else
  echo "[bench] memra bench wrote no results (rc=$mrc): $(tail -2 "$OUT/memra-bench.log" | head -1)"
fi
echo "total $(( $(date +%s) - t0 ))s"
exit "$mrc"
