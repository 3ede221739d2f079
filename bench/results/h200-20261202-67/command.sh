# Run 67 (session 27's last): the whole tools/gpu-check.sh on the final tree (the grouped experts'
# two lists and the large list's wide form, runs 65-66), after two A/B pairs in one binary:
#   new    = defaults (two lists from 16 rows)
#   split1 = MEMRA_CUDA_MOE_SPLIT=1 (two lists from 2 rows: does batch 8 / verify 6 gain too?)
# gpu-check's files are packed into check.tar.gz ($OUT keeps to the device's 8 files).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
$m --version | head -1
B="--timeline --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
run() { env $2 timeout 120 $m bench $B > /tmp/ab_$1.json 2>>/tmp/bench.log || echo "$1 rc=$?"; }
for i in 1 2; do run new_$i ""; run split1_$i "MEMRA_CUDA_MOE_SPLIT=1"; done; el
python3 - /tmp/ab_*.json > $OUT/ab.txt <<'PY'
import json,sys,os
for f in sorted(sys.argv[1:], key=lambda p: (p.split('_')[-1], p)):
    try: b=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'unreadable', e); continue
    n=os.path.basename(f)[3:-5]
    print(n, 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']],
          'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],3) for x in b['batch']],
          [x.get('last_sequence_bits_equal_alone') for x in b['batch']],
          'verify', [round(v['ms'],4) for v in b['verify']], [round(v['ratio_to_floor'],3) for v in b['verify']])
    for kind in ('batch','verify'):
        for x in b[kind]:
            tl=x.get('timeline') or {}
            sel={s['site']:round(s['ms']*1000,1) for s in tl.get('sites',[]) if 'experts' in s['site']}
            print('   ', kind, x.get('batch', x.get('block')), 'measured', round(tl.get('measured_ms',0),4), sel)
PY
cat $OUT/ab.txt; tail -2 /tmp/bench.log; el
OUT_MAIN=$OUT; left=$(( ${LIMIT:-560} - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
