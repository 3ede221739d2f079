# Run 216: two launches off a decode step's critical path, each with the same bits:
#  - the query heads' norm_rope inside the exact cluster / heads attention kernels' staging of q
#    (AttentionArgs::q_raw, query_stage.cuh; arm `qoff`: MEMRA_CUDA_ATTN_Q_NORM_EXACT=0, the launch);
#  - q_norm inside wq_b's and the indexer's wq_b's one-row kernel (LinearArgs::x_norm; arm `xoff`:
#    MEMRA_CUDA_LINEAR_X_NORM=0); arm `off`: both launches, the code before.
# ops attention and linear by bits on the GPU (the cluster kernel's raw-q check runs only here:
# memra-emu has no clusters), racecheck of the quick attention group, the A/B (five
# passes), then the v4 bench (on an H200 the issue's card, the first there since run 205; on an
# H100 the final code's table), then racecheck backend tiny --race with what is left.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ops_bits attention
ops_bits linear
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [[ -n "$san" ]]; then
  timeout 150 bash tools/racecheck.sh "$san" "$t" ops --quick --only attention > "$OUT/racecheck-attention.txt" 2>&1
  echo "racecheck ops attention rc=$? $(grep -E 'RACECHECK SUMMARY|checks,' "$OUT/racecheck-attention.txt" | tail -2 | tr '\n' ' ')"
fi
AB_SITES='attention|norm_rope|wq_b' ab_linear 5 base='' qoff='MEMRA_CUDA_ATTN_Q_NORM_EXACT=0' xoff='MEMRA_CUDA_LINEAR_X_NORM=0' \
  off='MEMRA_CUDA_ATTN_Q_NORM_EXACT=0 MEMRA_CUDA_LINEAR_X_NORM=0'
v4_bench 40
if [ "$(left)" -gt 190 ]; then racecheck_backend models/tiny $(( $(left) - 15 )); else echo "racecheck backend skipped: $(left) s left"; fi
el
