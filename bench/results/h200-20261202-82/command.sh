# Run 82: the attention's hc_post in wo_b's epilogue, the compressors' projections side by side and
# their state updates after the attention (1e40832). Tests: ops (every group), ops linear against the
# planted epilogue (last row skipped), backend tiny / tiny-bf16 / tiny-fp8, memcheck of ops linear;
# the bench A/B in one binary: new (defaults), epi0 (MEMRA_CUDA_HC_POST_EPILOGUE=0), side0
# (MEMRA_CUDA_SIDE_CHAINS=0), old (both), two passes.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 150 $t ops --seed 82 2>&1 | grep -E "FAIL|checks|hc_post epilogue" | cut -c1-220
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --only linear --seed 82 2>&1 | grep -E "FAIL|checks" | cut -c1-200 | sed 's/^/planted: /'
  for x in tiny tiny-bf16 tiny-fp8; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  timeout 150 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed 82 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --steps 8"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in new epi0 side0 old; do
    case $arm in new) e=MEMRA_AB=new;; epi0) e=MEMRA_CUDA_HC_POST_EPILOGUE=0;; side0) e=MEMRA_CUDA_SIDE_CHAINS=0;;
      old) e="MEMRA_CUDA_HC_POST_EPILOGUE=0 MEMRA_CUDA_SIDE_CHAINS=0";; esac
    env $e timeout 80 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py new1=/tmp/ab/new1.json epi0_1=/tmp/ab/epi01.json side0_1=/tmp/ab/side01.json old1=/tmp/ab/old1.json \
  new2=/tmp/ab/new2.json epi0_2=/tmp/ab/epi02.json side0_2=/tmp/ab/side02.json old2=/tmp/ab/old2.json >> $OUT/ab.txt 2>&1
python3 -c "
import json; d=json.load(open('/tmp/ab/new1.json')); print('ceilings', d['ceilings'])
for x in d['decode']: print('decode', x['context'], 'chain', x.get('graph_critical_kernels'), 'launch ms', x.get('critical_launch_ms'), 'step ms', x['step_ms'])" >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
# ncu: device time of the small kernels on a decode / batch-8 / verify-6 path, launch gaps excluded
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
timeout 170 $NCU --clock-control none -k 'regex:compressor_close|compressor_update|route_kernel|hc_pre_kernel|hc_mix|norm_rope|window_update|chain_link|rope_only|topk|indexer_scores|hc_post' \
  --launch-count 900 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active \
  --csv --page raw $m -q $NB > /tmp/ncu.csv 2>/tmp/ncu.err; echo "ncu rc=$?" > $OUT/ncu.txt
python3 - /tmp/ncu.csv >> $OUT/ncu.txt 2>&1 <<'PY'
import csv, sys, statistics, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if 'Kernel Name' in r)
h = rows[hdr]; data = rows[hdr + 2:]
unit = rows[hdr + 1][h.index('gpu__time_duration.sum')]
scale = {'nsecond': 1e-3, 'usecond': 1.0, 'msecond': 1e3}.get(unit, 1e-3)
print('duration unit', unit)
col = lambda r, k: r[h.index(k)]
g = collections.defaultdict(list)
for r in data:
    try:
        name = col(r, 'Kernel Name').replace('(anonymous namespace)', '').split('(')[0].split('<')[0].split('::')[-1]
        key = (name, col(r, 'Grid Size'), col(r, 'Block Size'))
        num = lambda k: float(col(r, k).replace(',', ''))
        g[key].append((num('gpu__time_duration.sum'), num('smsp__inst_executed.sum'), num('sm__warps_active.avg.pct_of_peak_sustained_active')))
    except Exception as e:
        pass
print(f"{'kernel':28s} {'grid':>14s} {'block':>12s} {'n':>4s} {'us med':>8s} {'instr':>10s} {'occ%':>6s}")
for k, v in sorted(g.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
    print(f"{k[0][:28]:28s} {k[1]:>14s} {k[2]:>12s} {len(v):4d} {statistics.median([x[0] for x in v])*scale:8.2f} {statistics.median([x[1] for x in v]):10.0f} {statistics.median([x[2] for x in v]):6.1f}")
PY
tail -3 /tmp/ncu.err >> $OUT/ncu.txt; cat $OUT/ncu.txt | head -80; el
