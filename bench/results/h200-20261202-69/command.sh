# Run 69: (1) the tiled exact linear stages its activations two chunks deep with cp.async (chunk
# c + 1 copied while chunk c is computed); (2) the small group list's wide form (a two-row group's
# w1 and w3 rows share each activation load; two w2 rows per down warp). Tests (every ops group,
# backend on 4 fixtures), memcheck and racecheck of ops linear and moe, the planted pipeline bug
# (planted/: the wait for the current chunk's copies dropped) against ops linear, then two A/B
# triples in one binary with the timeline: new = defaults; pipe0 = MEMRA_CUDA_LINEAR_PIPE=0 (run
# 68's linears); wide1 = MEMRA_CUDA_MOE_WIDE=1 (run 68's experts).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
seed=$(date +%s)
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
{ $m --version | head -1; echo "seed $seed"
  timeout 150 $t ops --seed $seed 2>&1 | grep -E "FAIL|checks|experts one list" | head -12 | cut -c1-240
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  for g in linear moe; do
    timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
    timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|hazard|checks" | tail -3
    timeout 150 $S --tool synccheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
  done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
{ echo "=== planted (linear_exact.cu: the pipelined tiled kernel does not wait for its chunk's copies), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only linear --seed 69 2>&1 | grep -E "FAIL|checks" | head -8 | cut -c1-240
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
B="--timeline --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
run() { env $2 timeout 120 $m bench $B > /tmp/ab_$1.json 2>>/tmp/bench.log || echo "$1 rc=$?"; }
for i in 1 2; do run new_$i ""; run pipe0_$i "MEMRA_CUDA_LINEAR_PIPE=0"; run wide1_$i "MEMRA_CUDA_MOE_WIDE=1"; done; el
python3 - /tmp/ab_*.json > $OUT/ab.txt <<'PY'
import json,sys,os
for f in sorted(sys.argv[1:], key=lambda p: (p.split('_')[-1], p)):
    try: b=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'unreadable', e); continue
    n=os.path.basename(f)[3:-5]
    print(n, 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']],
          'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],3) for x in b['batch']],
          [x.get('last_sequence_bits_equal_alone') for x in b['batch']],
          'verify', [round(v['ms'],4) for v in b['verify']], [round(v['ratio_to_floor'],3) for v in b['verify']],
          'exact prefill tok/s', round(b['prefill'].get('exact_tokens_per_s', 0)))
    for kind in ('batch','verify'):
        for x in b[kind]:
            tl=x.get('timeline') or {}
            sites=tl.get('sites',[])
            ex={s['site']:round(s['ms']*1000,1) for s in sites if 'experts' in s['site']}
            lin=round(sum(s['ms'] for s in sites if 'linear_exact' in s['site'])*1000,1)
            big={s['site']:round(s['ms']*1000,1) for s in sites if s['site'] in ('C:linear_exact (wq_b)','C:linear_exact (wo_a, grouped)','C:linear_exact (wo_b)','C:linear_exact (shared w1)')}
            print('   ', kind, x.get('batch', x.get('block')), 'measured', round(tl.get('measured_ms',0),4), ex, 'linears', lin, big)
PY
cat $OUT/ab.txt; tail -2 /tmp/bench.log; el
