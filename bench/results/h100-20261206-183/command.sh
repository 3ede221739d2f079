# Run 183: the large expert list on a side stream of its own (ExpertsArgs::large_stream, side
# stream 7), an A/B (`new`: the default, on; `off`: MEMRA_CUDA_MOE_LARGE_SIDE=0). First what says
# the bits held: the GPU's ops test of the experts (one list == two lists == the large list on its
# own stream), the backend suite on the four tiny checkpoints (graphs vs launches, batches vs alone,
# chunk widths) and `gate all` on tiny; then `memra bench --timeline` at 2 layers, batches 8/32/64
# and verify 6/16, arms interleaved, three passes.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 60 $t ops --only moe > $OUT/ops-moe.txt 2>&1; echo "ops moe rc=$?"; grep -E "lists|checks" $OUT/ops-moe.txt
for model in models/tiny models/tiny-bf16 models/tiny-fp8 models/tiny-fp4; do
  timeout 120 $t backend $model > $OUT/backend-$(basename $model).txt 2>&1
  echo "backend $(basename $model) rc=$? $(tail -1 $OUT/backend-$(basename $model).txt)"
done
timeout 60 $m -q gate all models/tiny --backend cuda > $OUT/gate-tiny.txt 2>&1; echo "gate all tiny rc=$?"; tail -1 $OUT/gate-tiny.txt
el
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites experts_fused $m /tmp/ab "$BA" \
  new='' off='MEMRA_CUDA_MOE_LARGE_SIDE=0' > $OUT/ab.txt 2>&1
tail -46 $OUT/ab.txt; el
tar czf $OUT/ab.tar.gz -C /tmp ab
