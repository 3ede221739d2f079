# Run 121: ncu durations of one cuda-fast prefill's mHC and compressor kernels (2048 rows), to split
# hc_pre's 0.445 ms a site (hc_rms, hc_mix_rows, hc_pre) after run 120.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
S="--section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats"
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k 'regex:hc_rms_kernel|hc_mix_rows_kernel|hc_pre_kernel|hc_post|compressor_close|hc_comb' \
  --launch-count 14 $S $m bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 2048 --snapshot-gib 0.05 --json > $OUT/ncu.txt 2>&1
echo "ncu rc=$?"
grep -E "^  [a-z].*\(|Duration|Registers Per|Achieved Occ|Theoretical Occ|Warp Cycles Per Issued|DRAM Throughput|Compute \(SM\)" $OUT/ncu.txt | sed 's/memra::cuda::<unnamed>:://' | cut -c1-150 | head -120
