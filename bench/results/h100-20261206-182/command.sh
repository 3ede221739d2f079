# Run 182 (7995a70): the snapshot bandwidth on another VM, three times (run 181's VM read 75% of the
# pinned copy where runs 173-179 read 83-86%): is the miss the VM's host or the code? Each run is
# memra_cuda_test bandwidth v4-flash --gib 1.0 (the product plan the median of three, then the
# variants); the host's CPU and memory described first.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
{ nproc; lscpu | grep -E "Model name|Socket|NUMA|L3"; grep -E "MemTotal" /proc/meminfo; systemd-detect-virt 2>/dev/null; } > $OUT/host.txt 2>&1
cat $OUT/host.txt
for i in 1 2 3; do
  timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth-$i.txt 2>&1; echo "run $i rc=$?"
  grep -E "pinned D2H|snapshot\)|interleaved 4 MiB, default|class by class 16 MiB, default|class hashes alone, 16|^ok|^FAIL" $OUT/bandwidth-$i.txt | head -9; el
done
