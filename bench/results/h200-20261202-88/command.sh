# Run 88: the register-tiled linear at 6-8 rows once more, on this tree (per-row router, side chains):
# def (defaults: from 16 rows), g8 (MEMRA_CUDA_LINEAR_GEMM=8: batch 8's wq_b, wo_a, indexer wq_b in
# 8-row blocks), g6 (=6: verify 6's too), three passes, with the timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --timeline"
mkdir -p /tmp/ab
for pass in 1 2 3; do
  for arm in def g8 g6; do
    case $arm in def) e=MEMRA_AB=def;; g8) e=MEMRA_CUDA_LINEAR_GEMM=8;; g6) e=MEMRA_CUDA_LINEAR_GEMM=6;; esac
    env $e timeout 80 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites 'linear_exact' def1=/tmp/ab/def1.json g8_1=/tmp/ab/g81.json g6_1=/tmp/ab/g61.json \
  def2=/tmp/ab/def2.json g8_2=/tmp/ab/g82.json g6_2=/tmp/ab/g62.json def3=/tmp/ab/def3.json g8_3=/tmp/ab/g83.json g6_3=/tmp/ab/g63.json >> $OUT/ab.txt 2>&1
python3 - /tmp/ab >> $OUT/ab.txt <<'PY'
import json, sys
names = ['wq_b', 'wo_a, grouped', 'wo_b + hc_post', 'indexer wq_b']
print("C-layer linears at batch 8 and verify 6 (us), pass 1:", ', '.join(names))
for arm in ['def', 'g8', 'g6']:
    try: doc = json.load(open(f'{sys.argv[1]}/{arm}1.json'))
    except Exception: print(arm, 'unreadable'); continue
    out = []
    for key, b in (('batch', doc['batch'][0]), ('verify', doc['verify'][0])):
        st = {s['site']: s['ms'] * 1000 for s in b['timeline']['sites']}
        out.append(f"{key[0]}: " + ' '.join(f"{st.get('C:linear_exact (' + k + ')', 0):.1f}" for k in names))
    print(f"  {arm:6s}", ' | '.join(out))
PY
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
