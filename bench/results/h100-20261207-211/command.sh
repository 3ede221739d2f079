# Run 211: linear_exact_rows16_kernel (16 rows × 32 outputs a block, 512 threads, two cp.async
# activation buffers) at 16-bit rounds from 16 rows whose grid fills ¾ of the SMs, against the rows
# kernel's 8-row blocks there. Arms `base` (the default: the 16-row form) and `old`
# (MEMRA_CUDA_LINEAR_ROWS16=0): `memra bench --timeline` at 2 layers, interleaved, four passes,
# per-arm medians and every linear site per round. Then ops linear by bits, under memcheck and under
# racecheck (the new kernel's barrier and buffers), the v4 bench and the whole check in what is left.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
ab_linear 4 base='' old='MEMRA_CUDA_LINEAR_ROWS16=0'
ops_bits linear
memcheck_ops linear
san=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
if [ -n "$san" ]; then
  timeout 120 bash tools/racecheck.sh "$san" "$t" ops --quick --only linear > "$OUT/racecheck-linear.txt" 2>&1
  echo "racecheck ops linear rc=$? $(grep -E 'RACECHECK SUMMARY|checks' "$OUT/racecheck-linear.txt" | tail -2 | tr '\n' ' ')"
fi
el
if [ "$(left)" -gt 120 ]; then v4_bench 40; else echo "v4 bench skipped: $(left) s of LIMIT left"; fi
if [ "$(left)" -gt 90 ]; then whole_check 80; else echo "whole check skipped: $(left) s of LIMIT left"; fi
