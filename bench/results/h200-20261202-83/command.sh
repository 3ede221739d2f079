# Run 83: the linears' stores spread over the lanes (the epilogue at 8 rows was 2% slower in run 82),
# route's bias and hc_mix's first weights before pdl_begin(). Tests: ops (every group), backend
# tiny / tiny-bf16 / tiny-fp8; bench A/B in one binary at the bench's default steps: new, epi0
# (MEMRA_CUDA_HC_POST_EPILOGUE=0), two passes; ncu of the small kernels, the experts and the tiled
# linears of a decode step, a batch-8 step and a verify-6 block (durations, launch gaps excluded).
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
  timeout 150 $t ops --seed 83 2>&1 | grep -E "FAIL|checks" | cut -c1-220
  for x in tiny tiny-bf16 tiny-fp8; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in new epi0; do
    case $arm in new) e=MEMRA_AB=new;; epi0) e=MEMRA_CUDA_HC_POST_EPILOGUE=0;; esac
    env $e timeout 80 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 100 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py new1=/tmp/ab/new1.json epi0_1=/tmp/ab/epi01.json new2=/tmp/ab/new2.json epi0_2=/tmp/ab/epi02.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
timeout 200 $NCU --clock-control none -k 'regex:(compressor_close|compressor_update|route_kernel|hc_pre_kernel|hc_mix|norm_rope|window_update|rope_only|topk|indexer_scores|hc_post|moe_one_row|linear_exact_tiled|linear_one_row|attention_cluster|embed|swiglu)' \
  --launch-count 1600 --metrics gpu__time_duration.sum,smsp__inst_executed.sum,sm__warps_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed \
  --csv --page raw $m -q $NB > /tmp/ncu.csv 2>/tmp/ncu.err; echo "ncu rc=$?" > $OUT/ncu.txt
python3 - /tmp/ncu.csv >> $OUT/ncu.txt 2>&1 <<'PY'
import csv, sys, statistics, collections
rows = list(csv.reader(open(sys.argv[1])))
hdr = next(i for i, r in enumerate(rows) if 'Kernel Name' in r)
h = rows[hdr]; data = rows[hdr + 2:]
unit = rows[hdr + 1][h.index('gpu__time_duration.sum')]
scale = {'nsecond': 1e-3, 'ns': 1e-3, 'usecond': 1.0, 'us': 1.0, 'msecond': 1e3}.get(unit, 1e-3)
print('duration unit', unit, 'launches', len(data))
col = lambda r, k: r[h.index(k)]
g = collections.defaultdict(list)
for r in data:
    try:
        name = col(r, 'Kernel Name').replace('(anonymous namespace)', '').split('(')[0].split('<')[0].split('::')[-1]
        key = (name, col(r, 'Grid Size'), col(r, 'Block Size'))
        num = lambda k: float(col(r, k).replace(',', ''))
        g[key].append((num('gpu__time_duration.sum'), num('smsp__inst_executed.sum'), num('sm__warps_active.avg.pct_of_peak_sustained_active'), num('dram__throughput.avg.pct_of_peak_sustained_elapsed')))
    except Exception as e:
        pass
print(f"{'kernel':28s} {'grid':>16s} {'block':>12s} {'n':>4s} {'us med':>8s} {'instr':>10s} {'occ%':>6s} {'dram%':>6s}")
for k, v in sorted(g.items(), key=lambda kv: (kv[0][0], -len(kv[1]))):
    md = lambda j: statistics.median([x[j] for x in v])
    print(f"{k[0][:28]:28s} {k[1]:>16s} {k[2]:>12s} {len(v):4d} {md(0)*scale:8.2f} {md(1):10.0f} {md(2):6.1f} {md(3):6.1f}")
PY
tail -3 /tmp/ncu.err >> $OUT/ncu.txt; head -120 $OUT/ncu.txt; el
