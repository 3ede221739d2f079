# Run 85: the final tree of session 29. The planted tie-rule slip in route's float4 count (lane w
# compares j + 2 < e) against ops topk (route ties) and moe → planted.txt; then the whole
# tools/gpu-check.sh (GPU_CHECK_FRESH=1), its results in check.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 60 $t ops --only topk --seed 85 2>&1 | grep -E "FAIL|checks|route" | cut -c1-200
  for g in topk moe; do
    LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only $g --seed 85 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed "s/^/planted $g: /"
  done
  el
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
OUT_MAIN=$OUT; left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
