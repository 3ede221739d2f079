# Run 207: the rows kernel for 16+ rows where the register-tiled form is not taken (wo_b at 16 rows,
# wq_a, the router, wkv, the shared expert at 16-32 rows, the compressor, weights_proj, the LM head:
# today the tiled kernel, which the rows kernel replaced at 2-15 rows in run 116 for +7% batch 8).
# Arms `base` (the default) and `r` (MEMRA_CUDA_LINEAR_ROWS=100000: the rows kernel wherever the
# register-tiled form is not taken), and `g3` (MEMRA_CUDA_LINEAR_GEMM_RING=3: the 16-row register-tiled
# form with two chunks in flight instead of one: wq_b / wo_a at verify 16, the 16-row sites of batch
# 32 / 64): `memra bench --timeline` at 2 layers, interleaved, three passes,
# per-arm medians. Then ops linear by bits under r (the rows kernel as the library's choice at
# 16+ rows) and under g3, and, under r (exported) if it lost neither batch 32, batch 64 nor verify 16, the v4
# bench with transformers (the first since the attention rule d9da3f7) and the whole gpu-check in
# what is left of LIMIT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
BA="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites linear_exact $m /tmp/ab "$BA" \
  base='' r='MEMRA_CUDA_LINEAR_ROWS=100000' g3='MEMRA_CUDA_LINEAR_GEMM_RING=3' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites linear_exact --per-site linear_exact /tmp/ab base,r,g3 | tee $OUT/medians.txt
el
MEMRA_CUDA_LINEAR_ROWS=100000 timeout 60 $t ops --only linear > $OUT/ops-linear-r.txt 2>&1
echo "ops linear (ROWS=100000) rc=$? $(tail -1 $OUT/ops-linear-r.txt)"
MEMRA_CUDA_LINEAR_GEMM_RING=3 timeout 60 $t ops --only linear > $OUT/ops-linear-g3.txt 2>&1
echo "ops linear (GEMM_RING=3) rc=$? $(tail -1 $OUT/ops-linear-g3.txt)"
if awk '$1 == "base" { b = $4; c = $5; v = $7 } $1 == "r" { rb = $4; rc = $5; rv = $7 }
        END { exit !(b && rb && rb >= b && rc >= 0.997 * c && rv <= v) }' $OUT/medians.txt; then
  export MEMRA_CUDA_LINEAR_ROWS=100000
fi
echo "the rest under MEMRA_CUDA_LINEAR_ROWS=${MEMRA_CUDA_LINEAR_ROWS:-(default)}"
el
# What is left of LIMIT decides the rest (the session's device time ran low after ten refused starts).
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
if [ "$(left)" -gt 250 ]; then v4_bench 40; else echo "v4 bench skipped: $(left) s of LIMIT left"; fi
if [ "$(left)" -gt 90 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
