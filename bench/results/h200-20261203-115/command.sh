# Run 115: why run 114's rows kernel lost to run 113's. Two changes, four forms
# (MEMRA_CUDA_LINEAR_ROWS_FORM=SF, bf16 only): S = x staged through registers (0) or by cp.async
# (1), F = each step's weight loads conditional (0, as run 113) or one clamped index (1). ops linear
# under each form and under the planted library (default form, a lane step's FMAs in reverse
# element order), the whole ops; A/B three passes with graph marks: f01 (default), f00, f10, f11
# (run 114's), tiled (MEMRA_CUDA_LINEAR_ROWS=0).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
ARMS=(f01='' f00='MEMRA_CUDA_LINEAR_ROWS_FORM=00' f10='MEMRA_CUDA_LINEAR_ROWS_FORM=10' f11='MEMRA_CUDA_LINEAR_ROWS_FORM=11'
      tiled='MEMRA_CUDA_LINEAR_ROWS=0')
{ $m --version | head -1
  for arm in "${ARMS[@]}"; do
    env ${arm#*=} timeout 100 $t ops --only linear --seed 115 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed "s/^/${arm%%=*}: /" | tail -3
  done
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 100 $t ops --only linear --seed 115 > $OUT/planted.txt 2>&1
  echo "planted: $(grep -c '^FAIL' $OUT/planted.txt) FAIL lines"; grep -E "^FAIL|checks" $OUT/planted.txt | cut -c1-200 | head -4 | sed 's/^/planted: /'
  timeout 200 $t ops --seed 115 2>&1 | grep -E "FAIL|checks" | tail -4; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --graph-marks"
bash bench/ab_arms.sh --passes 3 $m /tmp/ab "$BA" "${ARMS[@]}" > $OUT/ab.txt 2>&1
for a in "${ARMS[@]}"; do a=${a%%=*}; python3 bench/graph_marks.py /tmp/ab/${a}1.json --lines decode,batch,verify --top 40 | grep -E "^(decode|batch|verify)|linear_exact" | sed "s/^/$a: /"; done > $OUT/marks.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^arm" $OUT/ab.txt | sed -n '/^batch 8/,/^prefill/p'; el
