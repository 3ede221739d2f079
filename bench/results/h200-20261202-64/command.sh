# Run 64 (final of session 26): the tiled linear's outputs per warp chosen as the largest of 4, 2, 1
# whose grid gives every SM a block (run 63 chose 4 only at two blocks per SM, and 2 at one, which
# was slower than 4 for wo_a / wo_b / shared w1 at 256 blocks). Tests, then two A/B pairs in one
# binary with the timeline (new = the rule; all4 = MEMRA_CUDA_LINEAR_TILED=4, run 61's choice for
# every multi-row linear), the V4 bench beside transformers, then tools/gpu-check.sh on the time
# left (check.tar.gz; the device time left lets its later steps skip: run 63 ran them all on the
# same kernels).
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
  for g in linear moe; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | head -8 | cut -c1-240; done
  timeout 120 $t backend models/tiny 2>&1 | grep -E "FAIL|checks" | tail -2
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--timeline --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
run() { env $2 timeout 120 $m bench $B > /tmp/ab_$1.json 2>>/tmp/bench.log || echo "$1 rc=$?"; }
for i in 1 2; do run new_$i ""; run all4_$i "MEMRA_CUDA_LINEAR_TILED=4"; done; el
python3 - /tmp/ab_*.json > $OUT/ab.txt <<'PY'
import json,sys,os,re
for f in sorted(sys.argv[1:], key=lambda p: (p.split('_')[-1], p)):
    try: b=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'unreadable', e); continue
    n=os.path.basename(f)[3:-5]
    print(n, 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']],
          'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],3) for x in b['batch']],
          'verify', [round(v['ms'],4) for v in b['verify']], [round(v['ratio_to_floor'],3) for v in b['verify']])
    for kind in ('batch','verify'):
        for x in b[kind]:
            tl=x.get('timeline') or {}
            sel={s['site']:round(s['ms']*1000,1) for s in tl.get('sites',[]) if 'linear_exact' in s['site']}
            print('   ', kind, x.get('batch', x.get('block')), 'measured', round(tl.get('measured_ms',0),4), sel)
PY
grep -v '^    ' $OUT/ab.txt; tail -2 /tmp/bench.log; el
# The V4 bench beside transformers as gpu-check runs it (bench/gpu_bench.sh --timeline), then
# tools/gpu-check.sh on what is left of LIMIT seconds (its later steps skip; run 63 ran them all
# on the same kernels), both packed into check.tar.gz.
LIMIT=${LIMIT:-250}
mkdir -p /tmp/check/bench
env OUT=/tmp/check/bench BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline timeout 200 bash bench/gpu_bench.sh > /tmp/check/bench.log 2>&1; echo "gpu_bench rc=$?"
cat /tmp/check/bench/table.md 2>/dev/null | head -20; el
OUT_MAIN=$OUT; left=$(( LIMIT - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
OUT=/tmp/check GPU_CHECK_FRESH=0 GPU_CHECK_BENCH=0 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; tail -45 /tmp/check/summary.txt 2>/dev/null; el
