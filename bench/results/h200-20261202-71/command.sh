# Run 71: the review mend (moe.cu: launch_list derives each list's grid from the kernel's own
# template arguments; group_up_wide for its one index, without the unused kUpPerWarp loop). The
# session's last 78 s of device time: ops moe, backend tiny, and the bench's batch and decode lines
# (logits hash, last sequence alone).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
{ $m --version | head -1
  timeout 20 $t ops --only moe 2>&1 | grep -E "FAIL|checks|experts one list" | cut -c1-200
  timeout 20 $t backend models/tiny 2>&1 | grep -E "FAIL|checks" | tail -2
  timeout 25 $m bench --json --contexts 2048 --batches 8,32,64 --verify 6 --snapshot-gib 0.05 --prefill 64 --reps 1 2>/dev/null | python3 -c "
import json,sys; b=json.load(sys.stdin)
print('decode', [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],3) for x in b['batch']], [x.get('last_sequence_bits_equal_alone') for x in b['batch']])"
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
