# Run 68: the grouped experts in two lists from 2 rows (kSplitRows 16 → 2: run 67's A/B arm
# MEMRA_CUDA_MOE_SPLIT=1 took batch 8's experts 604 → 588 us a layer, verify 6's 474 → 460). Tests
# (every ops group, backend on 4 fixtures, gate all tiny), then the V4 bench beside transformers as
# gpu-check runs it (bench/gpu_bench.sh --timeline). Run 67 ran the whole gpu-check (sanitizers
# included) on the tree before this one-constant change.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
seed=$(date +%s)
{ $m --version | head -1; echo "seed $seed"
  timeout 150 $t ops --seed $seed 2>&1 | grep -E "FAIL|checks|experts one list" | head -12 | cut -c1-240
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  timeout 120 $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
mkdir -p /tmp/bench
env OUT=/tmp/bench BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline timeout 240 bash bench/gpu_bench.sh > /tmp/bench/console.txt 2>&1; echo "gpu_bench rc=$?"
cp /tmp/bench/table.md /tmp/bench/memra-bench.json /tmp/bench/transformers.json /tmp/bench/config.json /tmp/bench/decode_vs_context.png $OUT/ 2>/dev/null
cat /tmp/bench/table.md 2>/dev/null | head -24; tail -3 /tmp/bench/console.txt; el
