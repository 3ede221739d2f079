# Run 206: the attention rule of d9da3f7 (the cluster kernel up to 10 rows, 4 heads a block from 11)
# against the old (`c23`: MEMRA_CUDA_ATTN_CLUSTER_ROWS=23) and a lower threshold (`c8`:
# MEMRA_CUDA_ATTN_CLUSTER_ROWS=8): `memra bench --timeline` at 2 layers, verify 6/8/10/12/16 and
# batch 8, arms interleaved, three passes, per-arm medians. Then ops attention by bits and under
# memcheck, backend tiny, the v4 bench with transformers where LIMIT leaves room, and the whole
# gpu-check in what is left of LIMIT.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
BA="bench --json --timeline --contexts 2048 --batches 8 --verify 6,8,10,12,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 3 --timeout 60 --sites attention $m /tmp/ab "$BA" \
  new='' c23='MEMRA_CUDA_ATTN_CLUSTER_ROWS=23' c8='MEMRA_CUDA_ATTN_CLUSTER_ROWS=8' > $OUT/ab.txt 2>&1
tar czf $OUT/ab.tar.gz -C /tmp ab
python3 bench/ab_medians.py --sites attention /tmp/ab new | tee $OUT/medians.txt
el
ops_bits attention
memcheck_ops attention
timeout 120 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1; echo "backend tiny rc=$? $(tail -1 $OUT/backend-tiny.txt)"
el
# the v4 bench (~60 s) only where LIMIT leaves room for it and some of the check
(( ${LIMIT:-560} - ( $(date +%s) - T0 ) > 200 )) && v4_bench 40
whole_check 80
