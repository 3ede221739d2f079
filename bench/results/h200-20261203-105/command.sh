# Run 105: the decode attention's key slices through a cp.async ring of 4 chunks issued from the key
# table on (def), against a ring of 2 (ring2: one chunk in flight, as the register ring before), the
# staged form at 8 heads per cluster (e8: 8 clusters, one wave where run 104's 16 were not) and the
# Sinkhorn inside hc_pre (ca0). Planted library (every key copy drops its last key; hc_comb without
# the Sinkhorn's eps) on ops attention / mhc. A/B two passes with graph marks; then the whole
# tools/gpu-check.sh (GPU_CHECK_FRESH=1) under the default, or under e8 where e8's decode at 2k was
# faster by more than 1% in both passes (said in ab.txt). LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in attention mhc; do
    LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only $g --seed 105 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -4
  done; el
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
BA="bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 2 $m /tmp/ab "$BA" def='' ring2='MEMRA_CUDA_ATTN_RING=2' e8='MEMRA_CUDA_ATTN_CLUSTER=8' \
  ca0='MEMRA_CUDA_HC_COMB_APART=0' > $OUT/ab.txt 2>&1
for a in def ring2 e8 ca0; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode --top 40 | grep -E "^decode|attention|hc_pre|hc_comb" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
EXTRA=$(python3 - <<'PY'
import json
def ms(arm, p): return json.load(open(f"/tmp/ab/{arm}{p}.json"))["decode"][0]["ms_per_layer_token"]
try:
    print("MEMRA_CUDA_ATTN_CLUSTER=8" if all(ms("e8", p) < 0.99 * ms("def", p) for p in (1, 2)) else "")
except Exception as e:
    print("")
PY
)
echo "gpu-check under: ${EXTRA:-the defaults}" >> $OUT/ab.txt
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -64; grep -E "attention|hc_pre \(att" $OUT/marks.txt | head -16; el
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-580} - ( $(date +%s) - T0 ) - 15 ))
env $EXTRA OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
