# Run 200: session 52's final code (main 33219ba: the kernels of runs 197 and 199's base, and
# 1a7b703's host-side hashing bookkeeping) with what the budget left after seven refused starts
# allows: ops moe and linear by bits, backend tiny, and issue 13's v4 bench (bench/gpu_bench.sh:
# memra bench --timeline beside transformers on the same weights, the table and the plot) as
# bench.tar.gz.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
nvidia-smi --query-gpu=name --format=csv,noheader | head -1
for g in moe linear; do
  timeout 60 $t ops --only $g > $OUT/ops-$g.txt 2>&1; echo "ops $g rc=$? $(tail -1 $OUT/ops-$g.txt)"
done
timeout 90 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
bdir=/tmp/memra-v4-bench; rm -rf $bdir; mkdir -p $bdir
OUT=$bdir BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 MARGINAL_TIMEOUT=45 BENCH_ARGS=--timeline \
  timeout 240 bash bench/gpu_bench.sh > $bdir/console.txt 2>&1; echo "v4 bench rc=$?"
tar czf $OUT/bench.tar.gz -C $bdir .
cat $bdir/table.md 2>/dev/null | head -40
el
