# Run 87: how far the per-row GEMVs pay at 2-8 rows: MEMRA_CUDA_LINEAR_PER_ROW = 4096 (the default:
# router, wkv at 8 rows), 8192 (+ wq_a, the compressors), 16384 (+ shared w1/w3), 65536 (+ wq_b's
# neighbours: idx wq_b, shared w2, wo_a), two passes, with the timeline; ops linear (the knob changes
# no bits: forms compared by bits).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 60 $t ops --only linear --seed 87 2>&1 | grep -E "FAIL|checks" | cut -c1-220
  MEMRA_CUDA_LINEAR_PER_ROW=65536 timeout 60 $t ops --only linear --seed 87 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | sed 's/^/65536: /'
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in 4096 8192 16384 65536; do
    MEMRA_CUDA_LINEAR_PER_ROW=$arm timeout 80 $m $BA > /tmp/ab/p$arm$pass.json 2>/tmp/ab/p$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/p$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites 'linear_exact' p4k_1=/tmp/ab/p40961.json p8k_1=/tmp/ab/p81921.json p16k_1=/tmp/ab/p163841.json p64k_1=/tmp/ab/p655361.json \
  p4k_2=/tmp/ab/p40962.json p8k_2=/tmp/ab/p81922.json p16k_2=/tmp/ab/p163842.json p64k_2=/tmp/ab/p655362.json >> $OUT/ab.txt 2>&1
python3 - /tmp/ab >> $OUT/ab.txt <<'PY'
import json, sys
names = ['wq_a', 'wkv', 'compressor wkv', 'shared w1', 'shared w2', 'indexer wq_b', 'wq_b', 'wo_a, grouped', 'router']
print("C-layer linears at batch 8 and verify 6 (us), pass 1:", ', '.join(names))
for arm in ['4096', '8192', '16384', '65536']:
    try: doc = json.load(open(f'{sys.argv[1]}/p{arm}1.json'))
    except Exception: print(arm, 'unreadable'); continue
    out = []
    for key, b in (('batch', doc['batch'][0]), ('verify', doc['verify'][0])):
        st = {s['site']: s['ms'] * 1000 for s in b['timeline']['sites']}
        out.append(f"{key[0]}: " + ' '.join(f"{st.get('C:linear_exact (' + k + ')', 0):.1f}" for k in names))
    print(f"  {arm:6s}", ' | '.join(out))
PY
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
