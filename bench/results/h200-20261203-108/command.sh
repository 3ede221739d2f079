# Run 108: why the streamed few-row linear (run 107) was slower than the tiled kernel: ncu (kernel
# replay, --clock-control none) of linear_exact_stream_kernel (default) and linear_exact_tiled_kernel
# (MEMRA_CUDA_LINEAR_STREAM=0) in a bench with batch 8 and verify 6: speed of light, memory, warp
# states, occupancy and launch. Built at the commit that adds this line (copies off the matrix not made).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
for arm in stream tiled; do
  [[ $arm == tiled ]] && export MEMRA_CUDA_LINEAR_STREAM=0
  timeout 200 $NCU --clock-control none -k 'regex:linear_exact_(stream|tiled)' --launch-count 8 \
    --section LaunchStats --section Occupancy --section WarpStateStats --section SpeedOfLight --section MemoryWorkloadAnalysis \
    $m $NB > $OUT/ncu-$arm.txt 2>&1; echo "ncu $arm rc=$?"; el
done
for arm in stream tiled; do
  grep -E "linear_exact_|Duration|DRAM Throughput|Memory Throughput|L2 Hit|Stall|Warp Cycles Per Issued|Achieved Occupancy|Block Limit|Grid Size|Dynamic Shared|Registers Per|Shared Memory Configuration|Waves" $OUT/ncu-$arm.txt | head -90 | sed "s/^/$arm: /"
done
# Then (the copies off the matrix no longer made: run 107's zero-fill copies all named a.x or w) an
# A/B of two passes: def (streamed), s0 (tiled), one (decode's one-row rounds streamed too), np
# (a block per tile, not persistent: the side streams' kernels hold SMs while it runs), onenp.
unset MEMRA_CUDA_LINEAR_STREAM
BA="bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 2 $m /tmp/ab "$BA" def='' s0='MEMRA_CUDA_LINEAR_STREAM=0' one='MEMRA_CUDA_LINEAR_STREAM_ONE=1' \
  np='MEMRA_CUDA_LINEAR_STREAM_PERSIST=0' onenp='MEMRA_CUDA_LINEAR_STREAM_ONE=1 MEMRA_CUDA_LINEAR_STREAM_PERSIST=0' > $OUT/ab.txt 2>&1
for a in def s0 one np onenp; do python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | head -60; el
