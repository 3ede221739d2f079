# Run 51 (final of session 24): the planted indexer order (planted/: heads of a group added in
# descending order) must FAIL ops attention, then the whole tools/gpu-check.sh (every GPU test,
# gate, sanitizer, the V4 bench beside transformers) at the committed tree.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack
{ echo "=== planted (kernels/indexer.cu: a group's heads added in descending order), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $P/bin/memra_cuda_test ops --only attention --quick --seed 51 2>&1 | grep -E "indexer|checks" | cut -c1-240
} > $OUT/ops.txt 2>&1; cat $OUT/ops.txt
GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=550 bash tools/gpu-check.sh
