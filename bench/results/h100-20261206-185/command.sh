# Run 185: the snapshot with the class hashes on the device (594f02d: the descriptors' memory kept,
# the devices' half timed alone). The ops 'hash' group, then the 1 GiB V4-Flash-layout state's
# bandwidth three times: the product path, the host-hashed one, the devices' hashing alone.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
timeout 60 $t ops --only hash > $OUT/ops-hash.txt 2>&1; echo "ops hash rc=$?"; tail -2 $OUT/ops-hash.txt
for i in 1 2 3; do
  timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth-$i.txt 2>&1; echo "bandwidth $i rc=$?"
  grep -E "pinned D2H|no hash|class hashes on|alone, on the device|import_stream|snapshot >=|round trip" $OUT/bandwidth-$i.txt
done
el
