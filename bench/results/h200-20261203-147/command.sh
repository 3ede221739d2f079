# Run 147: issue 13's table on the session's last kernel change (033a216: the prefill attention on
# mma.sync with its one-pass softmax, the batched experts' fused row moves): bench/gpu_bench.sh as
# tools/gpu-check.sh runs it (memra bench --timeline beside transformers 5.17, compare.py's table
# and plot), ops attention and moe first.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
for g in attention moe; do timeout 120 $t ops --only $g --seed 147 2>&1 | grep -E "^FAIL|checks" | tail -3 | sed "s/^/$g: /"; done; el
OUT=$OUT/bench BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline bash bench/gpu_bench.sh > /tmp/gb.txt 2>&1
tail -25 /tmp/gb.txt; el
