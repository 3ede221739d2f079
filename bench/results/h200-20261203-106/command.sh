# Run 106: the final tree of session 31 (1adaa21: hc_comb apart, row_mix / hc_args_ok shared by
# hc_pre and hc_comb, never run on a GPU before): ops mhc first, then the whole tools/gpu-check.sh
# (GPU_CHECK_FRESH=1), its results in check.tar.gz. LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $P/bin/memra --version | head -1; timeout 90 $P/bin/memra_cuda_test ops --only mhc --seed 106 2>&1 | tail -3; el; } > $OUT/mhc.txt 2>&1; cat $OUT/mhc.txt
OUT_MAIN=$OUT; mkdir -p /tmp/check
left=$(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 15 ))
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
