# Run 176: the mark as one copy a device (dd7c67b, e3d658d) against the same tree with those two
# reverted (old/libmemra_cuda.so.xz, built here from HEAD with old.patch: the bench needs
# weights_holders, which 24af68c's library lacks) and the host mark (MEMRA_CUDA_HOST_MARK=1), in one
# call: `memra bench` at 2 layers (CSA + HCA), verify 6 and 16 with the round's costs, arms
# interleaved, two passes; then the CUDA backend test on tiny (the state's new layout: mark and
# rewind, keep == alone) and the speculative gate on cuda with the new library.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
{ $m --version | head -1; nvidia-smi --query-gpu=name,memory.total --format=csv,noheader; } > $OUT/tests.txt 2>&1
lib_arm old || echo "lib_arm old failed" >> $OUT/tests.txt
BA="bench --layers CH --json --contexts 2048 --batches 8 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
bash bench/ab_arms.sh --passes 2 --timeout 100 $m /tmp/ab "$BA" new='' old='bin=/tmp/old/bin' host='MEMRA_CUDA_HOST_MARK=1' > $OUT/ab.txt 2>&1
cat $OUT/ab.txt; el
mkdir -p $OUT/ab && cp /tmp/ab/* $OUT/ab/
left() { echo $(( ${LIMIT:-560} - ( $(date +%s) - T0 ) - 10 )); }
{ timeout $(( $(left) / 2 )) $t backend models/tiny > /tmp/backend-tiny.txt 2>&1; echo "backend tiny rc=$?"
  grep -E "^FAIL|checks|rewind|alone" /tmp/backend-tiny.txt | cut -c1-200 | tail -20; el
  timeout $(left) $m -q gate speculative models/tiny --drafter models/drafters/tiny-dspark-trained \
    --tokens models/prompt.txt --backend cuda > /tmp/gate-spec.txt 2>&1; echo "gate speculative rc=$?"
  tail -5 /tmp/gate-spec.txt; el
} >> $OUT/tests.txt 2>&1
cp /tmp/backend-tiny.txt /tmp/gate-spec.txt $OUT/; cat $OUT/tests.txt
