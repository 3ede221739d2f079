# Run 113: linear_exact_rows_kernel (2-15 rows of a 16-bit matrix: rows a block fixed at compile
# time, zero rows staged, bf16 decoded by shifts, weights 4 / KO lane steps ahead,
# warp_sum_many). ops linear, ops linear under the planted library (the rows kernel's FMAs of a
# lane step in reverse element order: the same sum, other bits), the whole ops; the SASS of the
# tiled and rows kernels at 4 outputs a warp; ncu of the rows kernel at batch 8; A/B three passes
# with graph marks: def (rows kernel) and tiled (MEMRA_CUDA_LINEAR_ROWS=0).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 100 $t ops --only linear --seed 113 2>&1 | grep -E "FAIL|checks|linear bf16 1024x96|linear f16 2600" | cut -c1-220
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 100 $t ops --only linear --seed 113 > $OUT/planted.txt 2>&1
  echo "planted: $(grep -c '^FAIL' $OUT/planted.txt) FAIL lines"; grep -E "^FAIL|checks" $OUT/planted.txt | cut -c1-200 | head -12 | sed 's/^/planted: /'
  timeout 200 $t ops --seed 113 2>&1 | grep -E "FAIL|checks" | tail -4; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
CUOBJ=$(command -v cuobjdump || ls /usr/local/cuda/bin/cuobjdump 2>/dev/null)
for k in 'linear_exact_rows_kernelI13__nv_bfloat16Li4ELi8E' 'linear_exact_tiled_kernelINS0_8PlainRowI13__nv_bfloat16EELi4ELi2ELb1ELin1E'; do
  $CUOBJ -sass $P/bin/libmemra_cuda.so 2>/dev/null | awk -v k="$k" '/Function :/{p = index($0, k) > 0} p' > $OUT/sass-${k:13:5}.txt
  echo "$k: $(grep -cE '^\s+/\*[0-9a-f]+\*/' $OUT/sass-${k:13:5}.txt) instructions"
  grep -oE '^\s+/\*[0-9a-f]+\*/\s+(@!?U?P[0-9T] )?[A-Z0-9.]+' $OUT/sass-${k:13:5}.txt | awk '{print $NF}' | sed 's/\..*//' | sort | uniq -c | sort -rn | head -14 | tr '\n' ' '; echo
done
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
S="--section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats --section SpeedOfLight --section InstructionStats"
timeout 200 $NCU --clock-control none --kernel-name-base demangled -k 'regex:linear_exact_rows_kernel' --launch-count 12 $S \
  $m $NB > $OUT/ncu-rows.txt 2>&1; echo "ncu rc=$?"; el
grep -E "^  void|Duration|DRAM Throughput|Eligible Warps|Warp Cycles Per Issued|Executed Instructions  |Registers Per" $OUT/ncu-rows.txt | sed 's/(LinearArgs)//; s/Context 1.*//' | head -100
ARMS=(def='' tiled='MEMRA_CUDA_LINEAR_ROWS=0')
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^decode/,/^prefill/p' | grep -v "^  .*_[23] "; grep -A8 "^verify 6" $OUT/ab.txt; el
