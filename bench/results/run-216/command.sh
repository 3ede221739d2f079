# Run 216: the query heads' norm_rope inside the exact cluster / heads attention kernels' staging of
# q (AttentionArgs::q_raw, query_stage.cuh): ops attention by bits on the GPU (the cluster kernel's
# raw-q check runs only here: memra-emu has no clusters), racecheck and memcheck of its quick group,
# then an A/B against the separate launch (`qoff`: MEMRA_CUDA_ATTN_Q_NORM_EXACT=0), five passes,
# then the v4 bench (on an H200 the issue's card, the first there since run 205; on an H100 the final
# code's table), then racecheck backend tiny --race with what is left.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits attention
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -n "$san" ]]; then
  timeout 150 bash tools/racecheck.sh "$san" "$t" ops --quick --only attention > "$OUT/racecheck-attention.txt" 2>&1
  echo "racecheck ops attention rc=$? $(grep -E 'RACECHECK SUMMARY|checks,' "$OUT/racecheck-attention.txt" | tail -2 | tr '\n' ' ')"
fi
memcheck_ops attention
AB_SITES='attention|norm_rope' ab_linear 5 base='' qoff='MEMRA_CUDA_ATTN_Q_NORM_EXACT=0'
v4_bench 40
if [ "$(left)" -gt 190 ]; then racecheck_backend models/tiny $(( $(left) - 15 )); else echo "racecheck backend skipped: $(left) s left"; fi
el
