# Run 184: the state class hashes on the device (kernels/class_hash.cu, ea9e5ac). First the bits:
# the ops 'hash' group (class_hash()'s bits for 147 streams at XXH3's boundaries, every alignment,
# split parts) alone, under memcheck (every read inside its part) and under racecheck (the tile's
# shared sums); the backend suite on tiny and tiny-fp8 (its new check: the device's class hashes ==
# the host's of the landed bytes, window rings wrapped); `gate all` on tiny. Then the snapshot
# bandwidth of the 1 GiB V4-Flash-layout state, three times: the product path (hashes on the
# device) against the pinned copy, and the host-hashed path beside it.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 60 $t ops --only hash > $OUT/ops-hash.txt 2>&1; echo "ops hash rc=$?"; tail -3 $OUT/ops-hash.txt
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $s --tool memcheck --error-exitcode 9 --print-limit 30 $t ops --quick --only hash > $OUT/memcheck-hash.txt 2>&1
echo "memcheck hash rc=$?"; tail -3 $OUT/memcheck-hash.txt
timeout 120 bash tools/racecheck.sh $s $t ops --quick --only hash > $OUT/racecheck-hash.txt 2>&1
echo "racecheck hash rc=$?"; tail -3 $OUT/racecheck-hash.txt
el
for model in models/tiny models/tiny-fp8; do
  timeout 120 $t backend $model > $OUT/backend-$(basename $model).txt 2>&1
  echo "backend $(basename $model) rc=$? $(grep 'class hashes' $OUT/backend-$(basename $model).txt | head -1) $(tail -1 $OUT/backend-$(basename $model).txt)"
done
timeout 60 $m -q gate all models/tiny --backend cuda > $OUT/gate-tiny.txt 2>&1; echo "gate all tiny rc=$?"; tail -1 $OUT/gate-tiny.txt
el
for i in 1 2 3; do
  timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth-$i.txt 2>&1; echo "bandwidth $i rc=$?"
  grep -E "pinned D2H|no hash|class hashes on|import_stream|snapshot >=" $OUT/bandwidth-$i.txt
done
grep -E "alone|variants" -A0 $OUT/bandwidth-1.txt | head -8
el
