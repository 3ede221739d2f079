# Run 66: the large group list's wide form (w1's and w3's rows sharing each activation load;
# two w2 rows per down warp; 128 registers at two blocks per SM) beside run 65's two lists, and the
# one-list kernels back to one group per block row (run 65's stride loop cost the 8-row up kernel
# 8 registers and 64 bytes of spills). Tests (every ops group, backend tiny), the planted wide-form
# bug (gate and up swapped in group_up_wide) against ops moe, then two A/B triples in one binary with
# the timeline: new = defaults (two lists from 16 rows, the large list wide); narrow =
# MEMRA_CUDA_MOE_WIDE=0 (run 65's new); one = MEMRA_CUDA_MOE_SPLIT=0 (one list).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
seed=$(date +%s)
{ $m --version | head -1; echo "seed $seed"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 150 $t ops --seed $seed 2>&1 | grep -E "FAIL|checks|experts one list" | head -12 | cut -c1-240
  timeout 120 $t backend models/tiny 2>&1 | grep -E "FAIL|checks" | tail -3
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
{ echo "=== planted (moe.cu: group_up_wide swaps gate and up), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only moe --seed 66 2>&1 | grep -E "FAIL|checks" | head -8 | cut -c1-240
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
B="--timeline --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
run() { env $2 timeout 120 $m bench $B > /tmp/ab_$1.json 2>>/tmp/bench.log || echo "$1 rc=$?"; }
for i in 1 2; do run new_$i ""; run narrow_$i "MEMRA_CUDA_MOE_WIDE=0"; run one_$i "MEMRA_CUDA_MOE_SPLIT=0"; done; el
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
