# Run 78 (session 28's last): the final tree (2365ef4: the register-tiled exact linear, 16-bit
# weights raw, 16-row blocks three per SM, from 16 rows). First a short A/B in one binary (off:
# MEMRA_CUDA_LINEAR_GEMM=0, the tiled kernel; new: defaults; g6: the 8-row form from 6 rows; t32:
# 32-row blocks above 16 rows), the planted raw decode (bf16 halves swapped) against ops linear,
# then the whole tools/gpu-check.sh on the time left (LIMIT); its files packed into check.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  echo "planted (raw bf16 decode: halves swapped), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --quick --only linear --seed 78 2>&1 | grep -E "FAIL|checks" | head -4 | cut -c1-240
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 1 --steps 8 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in off new g6 t32; do
    case $arm in off) e=MEMRA_CUDA_LINEAR_GEMM=0;; new) e=MEMRA_AB=new;; g6) e=MEMRA_CUDA_LINEAR_GEMM=6;; t32) e=MEMRA_CUDA_LINEAR_GEMM_TILE=32;; esac
    env $e timeout 60 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$?"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites linear_exact off1=/tmp/ab/off1.json new1=/tmp/ab/new1.json g6_1=/tmp/ab/g61.json t32_1=/tmp/ab/t321.json \
  off2=/tmp/ab/off2.json new2=/tmp/ab/new2.json g6_2=/tmp/ab/g62.json t32_2=/tmp/ab/t322.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "^  .*(cuda-fast)" $OUT/ab.txt | tail -42; el
OUT_MAIN=$OUT; left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
