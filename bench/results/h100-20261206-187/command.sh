# Run 187: the class-hash kernel at 512 threads a block (15 fill warps, tiles of 120 blocks, the
# chain's shared loads 8 ahead; run 186's 256-thread form hashed the 1 GiB state alone at 179-187
# GB/s). The ops 'hash' group alone and under memcheck and racecheck, then the bandwidth twice.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 60 $t ops --only hash > $OUT/ops-hash.txt 2>&1; echo "ops hash rc=$?"; tail -1 $OUT/ops-hash.txt
s=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
timeout 120 $s --tool memcheck --error-exitcode 9 --print-limit 30 $t ops --quick --only hash > $OUT/memcheck-hash.txt 2>&1
echo "memcheck hash rc=$?"; tail -1 $OUT/memcheck-hash.txt
timeout 120 bash tools/racecheck.sh $s $t ops --quick --only hash > $OUT/racecheck-hash.log 2>&1
echo "racecheck hash rc=$?"; tail -1 $OUT/racecheck-hash.log
for i in 1 2; do
  timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth-$i.txt 2>&1; echo "bandwidth $i rc=$?"
  grep -E "state:|pinned D2H|no hash|class hashes on|alone, on the device|snapshot >=|round trip \(stream" $OUT/bandwidth-$i.txt
done
el
