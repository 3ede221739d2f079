# Run 111: the few-row tiled linear's warps and epilogue. ops linear under every arm's setting and
# under the planted library (the many-sum epilogue's value × 1.0000001: a last-bit change), the
# whole ops (test/fixtures left behind: the carry limit); the snapshot bandwidth twice (run 110's command, never run); then A/B
# three passes with graph marks: old (MEMRA_CUDA_LINEAR_TILED_SUM=0: main's epilogue, one warp_sum a
# value), def (warp_sum_many), p1 / p2 (4 outputs a warp, 1 / 2 lane steps fetched ahead), k2 (at
# most 2 outputs a warp), k2m3 / k2m4 (and 3 / 4 blocks an SM), k1m4 (1 output a warp, 4 blocks).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
K=MEMRA_CUDA_LINEAR_TILED
ARMS=(old="${K}_SUM=0" def='' p1="${K}_PRE4=1" p2="${K}_PRE4=2" k2="${K}_MAXKO=2" k2m3="${K}_MAXKO=2 ${K}_MINB=3"
      k2m4="${K}_MAXKO=2 ${K}_MINB=4" k1m4="${K}_MAXKO=1 ${K}_MINB=4")
{ $m --version | head -1
  for arm in "${ARMS[@]}"; do
    env ${arm#*=} timeout 100 $t ops --only linear --seed 111 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed "s/^/${arm%%=*}: /" | tail -4
  done
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 100 $t ops --only linear --seed 111 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -6
  timeout 200 $t ops --seed 111 2>&1 | grep -E "FAIL|checks" | tail -4
  el
  nproc; grep -m1 "model name" /proc/cpuinfo
  for i in 1 2; do timeout 90 $t bandwidth v4-flash --gib 1.0 > $OUT/bandwidth$i.txt 2>&1; echo "bandwidth rc=$?"; done
  grep -hE "pinned D2H|export_stream|import_stream|hashes alone|snapshot >=|restore >=" $OUT/bandwidth*.txt; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -80; el
