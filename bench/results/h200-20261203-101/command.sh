# Run 101 (branch probe-run101): in-kernel phase probes of the attention cluster kernel, hc_mix and
# hc_pre inside the decode graph (graph-mark slots, atomicMax of the global timer per phase), and
# ncu's warp states of attention_cluster / hc_pre / hc_mix at one decode row.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
$m --version | head -1
for i in 1 2; do
  timeout 150 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 2 --graph-marks > $OUT/bench$i.json 2> $OUT/bench$i.err
  echo "bench rc=$?"; python3 bench/graph_marks.py $OUT/bench$i.json --top 8 > $OUT/marks$i.txt
  python3 bench/phase_probe.py $OUT/bench$i.json | tee $OUT/probe$i.txt
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
timeout 150 $NCU --clock-control none -k 'regex:(attention_cluster|hc_pre_kernel|hc_mix)' --launch-count 12 \
  --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight \
  $m $NB > $OUT/ncu.txt 2>&1; echo "ncu rc=$?"
grep -E "attention_cluster|hc_pre_kernel|hc_mix|Duration|Stall|Shared Memory Configuration|Registers|Warp Cycles Per Issued|Achieved Occupancy" $OUT/ncu.txt | head -120
