# Run 94: graph marks (kernels/graph_marks.h): when each site of a decode / verify 6 / batch 8 step
# ends inside its CUDA graph, by stream; two runs of memra bench --graph-marks, then
# bench/graph_marks.py's tables.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
for i in 1 2; do
  timeout 120 $m bench --json --contexts 2048,32768 --batches 8,32 --verify 6,16 --prefill 64 --reps 3 --snapshot-gib 0.05 \
    --graph-marks > $OUT/marks$i.json 2> $OUT/marks$i.err; echo "bench $i rc=$?"; tail -2 $OUT/marks$i.err
done
for i in 1 2; do python3 bench/graph_marks.py $OUT/marks$i.json --top 40 > $OUT/marks$i.txt 2>&1; done
cat $OUT/marks1.txt; el
