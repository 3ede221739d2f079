# Run 110: the snapshot/restore bandwidth again on the final tree (run 106's VM read 59%, runs 9-98
# 76-85%): memra_cuda_test bandwidth v4-flash --gib 1.0, twice.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; export LD_LIBRARY_PATH=$P/bin
nproc; grep -m1 "model name" /proc/cpuinfo
for i in 1 2; do timeout 90 $P/bin/memra_cuda_test bandwidth v4-flash --gib 1.0 > $OUT/bandwidth$i.txt 2>&1; echo "rc=$?"; done
grep -E "pinned D2H|export_stream|import_stream|hashes alone|snapshot >=|restore >=" $OUT/bandwidth*.txt
