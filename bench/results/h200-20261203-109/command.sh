# Run 109: ncu of the streamed few-row linear itself (binaries of branch stream-run107 at fe0e5e7,
# carried as build-gpu-pack; main no longer has the kernel): linear_exact_stream_kernel at batch 8
# and verify 6 (default), and the tiled kernel at 4 outputs a warp (MEMRA_CUDA_LINEAR_STREAM=0),
# by kernel name this time (run 108's filter caught only small tiled launches).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section MemoryWorkloadAnalysis"
timeout 150 $NCU --clock-control none --kernel-name-base demangled -k 'regex:linear_exact_stream_kernel' --launch-count 6 $S \
  $m $NB > $OUT/ncu-stream.txt 2>&1; echo "ncu stream rc=$?"; el
MEMRA_CUDA_LINEAR_STREAM=0 timeout 150 $NCU --clock-control none --kernel-name-base demangled \
  -k 'regex:linear_exact_tiled_kernel<PlainRow<__nv_bfloat16>, 4>' --launch-count 6 $S \
  $m $NB > $OUT/ncu-tiled.txt 2>&1; echo "ncu tiled rc=$?"; el
for arm in stream tiled; do
  grep -E "linear_exact_|Duration|DRAM Throughput|L2 Cache Throughput|L1/TEX Cache|Stall|Warp Cycles Per Issued|Issue Slots|Eligible|Achieved Occupancy|Grid Size|Dynamic Shared|Registers Per|Waves" $OUT/ncu-$arm.txt | head -70 | sed "s/^/$arm: /"
done
