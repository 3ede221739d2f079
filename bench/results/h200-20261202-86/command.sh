# Run 86: a few rows of a matrix with few outputs as one GEMV per row (the router at 2-8 rows).
# Tests: ops (every group), backend tiny / tiny-bf16, ops linear against the planted per-row kernel
# (rows past 1 read the row before). Bench A/B in one binary, two passes: new (defaults), pr0
# (MEMRA_CUDA_LINEAR_PER_ROW=0), hb4 (MEMRA_CUDA_ATTN_CLUSTER=4: 4 heads per cluster at 3+ rows),
# ko4 (MEMRA_CUDA_LINEAR_TILED=4), with the timeline.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 150 $t ops --seed 86 2>&1 | grep -E "FAIL|checks" | cut -c1-220
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only linear --seed 86 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /' | tail -6
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in new pr0 hb4 ko4; do
    case $arm in new) e=MEMRA_AB=new;; pr0) e=MEMRA_CUDA_LINEAR_PER_ROW=0;; hb4) e=MEMRA_CUDA_ATTN_CLUSTER=4;; ko4) e=MEMRA_CUDA_LINEAR_TILED=4;; esac
    env $e timeout 80 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites 'router|attention$|wo_b|wq_a|weights_proj' new1=/tmp/ab/new1.json pr0_1=/tmp/ab/pr01.json hb4_1=/tmp/ab/hb41.json ko4_1=/tmp/ab/ko41.json \
  new2=/tmp/ab/new2.json pr0_2=/tmp/ab/pr02.json hb4_2=/tmp/ab/hb42.json ko4_2=/tmp/ab/ko42.json >> $OUT/ab.txt 2>&1
python3 - /tmp/ab >> $OUT/ab.txt <<'PY'
import json, sys
print("router / C attention / wo_b (+hc_post) / wq_a (C layer, us), pass 1")
for arm in ['new', 'pr0', 'hb4', 'ko4']:
    try: doc = json.load(open(f'{sys.argv[1]}/{arm}1.json'))
    except Exception: print(arm, 'unreadable'); continue
    out = []
    for key in ('batch', 'verify'):
        for b in doc[key]:
            st = {s['site']: s['ms'] * 1000 for s in b['timeline']['sites']}
            out.append(f"{key[0]}{b.get('batch', b.get('block'))}: " + ' '.join(f"{st.get(k, 0):.1f}" for k in ('C:linear_exact (router)', 'C:attention', 'C:linear_exact (wo_b + hc_post)', 'C:linear_exact (wq_a)')))
    print(f"  {arm:4s}", ' | '.join(out))
PY
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
