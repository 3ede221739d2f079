# Run 186: the class-hash kernel with a block's loads in flight at once and double-buffered tiles
# (09bc608; run 185 timed the devices' hashing alone at 63 GB/s for the 1 GiB state: 2.3 GB/s a
# class). The ops 'hash' group alone and under memcheck and racecheck, the backend suite on tiny,
# then the 1 GiB V4-Flash-layout state's bandwidth three times.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 60 $t ops --only hash > $OUT/ops-hash.txt 2>&1; echo "ops hash rc=$?"; tail -2 $OUT/ops-hash.txt
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $s --tool memcheck --error-exitcode 9 --print-limit 30 $t ops --quick --only hash > $OUT/memcheck-hash.txt 2>&1
echo "memcheck hash rc=$?"; tail -1 $OUT/memcheck-hash.txt
timeout 120 bash tools/racecheck.sh $s $t ops --quick --only hash > $OUT/racecheck-hash.log 2>&1
echo "racecheck hash rc=$?"; tail -1 $OUT/racecheck-hash.log
timeout 120 $t backend models/tiny > $OUT/backend-tiny.txt 2>&1
echo "backend tiny rc=$? $(grep 'class hashes' $OUT/backend-tiny.txt | head -1)"; tail -1 $OUT/backend-tiny.txt
el
for i in 1 2 3; do
  timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth-$i.txt 2>&1; echo "bandwidth $i rc=$?"
  grep -E "pinned D2H|no hash|class hashes on|alone, on the device|import_stream|snapshot >=|round trip" $OUT/bandwidth-$i.txt
done
el
