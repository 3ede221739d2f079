# Run 63: the tiled exact linear with 1, 2 or 4 outputs per warp chosen by the grid (the chunk's
# weights fetched before the staging barrier at 1 and 2); the cluster attention at 8 heads per
# cluster for rounds of 3+ rows; compressor_close's row loads batched (8 in flight) and
# compressor_update on 32-bit indices (in every configuration below; run 61 is their before); the
# indexer kernels' shared prologue and loops (a refactor whose SASS differs from run 61's only in
# integer address arithmetic). Tests (ops linear/compressor/attention/moe/packed/synthetic/topk,
# backend, gate), the planted KO = 2 order (planted/: v descending) against ops linear, then A/B in
# one binary:
#   new    = defaults
#   old    = MEMRA_CUDA_LINEAR_TILED=4 MEMRA_CUDA_ATTN_CLUSTER=4 (the kernels as before this run)
#   lin4   = MEMRA_CUDA_LINEAR_TILED=4 (the attention's change alone)
#   crows  = MEMRA_CUDA_ATTN_CLUSTER_ROWS=64 (the cluster kernel also for batch 32 and 64)
#   ctx32k = defaults at 32k context (the indexer's scores time against run 61's)
# then ncu of the 64-row exact forward's tiled linears and MoE launches, then the whole
# tools/gpu-check.sh on the time left (its files packed into check.tar.gz).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
seed=$(date +%s)
{ echo "=== planted (linear_exact.cu KO = 2: v descending), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only linear --seed 63 2>&1 | grep -E "FAIL|checks" | head -8 | cut -c1-240
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
export LD_LIBRARY_PATH=$P/bin
{ $m --version | head -1; echo "seed $seed"
  for g in linear compressor attention moe packed synthetic topk; do timeout 120 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | head -12 | cut -c1-240; done
  for x in tiny tiny-fp8 tiny-bf16; do timeout 150 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  timeout 120 $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
run() { env $2 timeout 120 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log || echo "$1 rc=$?"; }
for i in 1 2; do
  run new_$i ""; run old_$i "MEMRA_CUDA_LINEAR_TILED=4 MEMRA_CUDA_ATTN_CLUSTER=4"
  run lin4_$i "MEMRA_CUDA_LINEAR_TILED=4"; run crows_$i "MEMRA_CUDA_ATTN_CLUSTER_ROWS=64"
  el
done
env timeout 120 $m bench --json --contexts 32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --reps 2 > /tmp/ctx32k_1.json 2>>/tmp/bench.log || echo "ctx32k rc=$?"
python3 - /tmp/*.json > $OUT/ab.txt <<'PY'
import json,sys,os,re
for f in sorted(sys.argv[1:], key=lambda p: (p.split('_')[-1], p)):
    try: b=json.load(open(f))
    except Exception as e: print(os.path.basename(f), 'unreadable', e); continue
    n=os.path.basename(f)[:-5]
    print(n, 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']],
          'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],3) for x in b['batch']],
          [x.get('last_sequence_bits_equal_alone') for x in b['batch']],
          'verify', [round(v['ms'],4) for v in b['verify']], [round(v['ratio_to_floor'],3) for v in b['verify']], b.get('failures'))
    for x in b['decode']:
        sites={s['site']:s['ms']*1000 for s in x['timeline']['sites']}
        print('    decode', x['context'], {k:round(v,1) for k,v in sites.items() if re.search(r'indexer_scores|topk|C:attention', k)})
    for kind in ('batch','verify'):
        for x in b[kind]:
            key=x.get('batch', x.get('block'))
            sites={s['site']:s['ms']*1000 for s in x['timeline']['sites']}
            sel={k:round(v,1) for k,v in sites.items() if re.search(r'attention|linear_exact|experts|compressor', k)}
            print('   ', kind, key, 'step', round(x.get('step_ms', x.get('ms',0)),4), 'sum', round(x['timeline']['device_ms_sum'],4), sel)
PY
cat $OUT/ab.txt | grep -v '^    '; tail -3 /tmp/bench.log; el
# ncu of a 64-row exact forward (the bench's first: its tiled linears and MoE group/up/down
# launches, first 24) to see what bounds batch 64's routed experts and linears.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
K='moe_group_kernel|moe_up_kernel|moe_down_kernel|linear_exact_tiled_kernel'
BA="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json"
timeout 100 $NCU --clock-control none -k regex:"$K" --launch-count 24 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  -o /tmp/moe $m -q $BA > /dev/null 2>/tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
$NCU --import /tmp/moe.ncu-rep --csv --page details > /tmp/ncu.csv 2>/dev/null
python3 - /tmp/ncu.csv <<'PY' > $OUT/ncu-moe.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    by.setdefault((r['ID'],r['Kernel Name'][:90]),[]).append((r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none: the first 24 tiled-linear and MoE launches of memra bench (the 64-row exact forward)")
for (i,name),ms in by.items():
    print(f"== launch {i} {name}")
    for n,u,v in ms:
        if any(w in n for w in ('Duration','Grid Size','Block Size','Issued Warp','Achieved Occupancy','Theoretical Occupancy','Registers','Memory Throughput','DRAM Throughput','L1/TEX Hit','L2 Hit','Compute (SM) Throughput','Eligible Warps','No Eligible','Warp Cycles Per Issued','Executed Instructions','Mem Busy','Max Bandwidth','L1/TEX Cache Throughput')): print(f"   {n:52s} {v} {u}")
PY
grep -E "== launch|Duration|DRAM Throughput|L1/TEX Cache Throughput|Warp Cycles Per Issued|Achieved Occ" $OUT/ncu-moe.txt | head -150; el
# The whole tools/gpu-check.sh on what time is left (its files packed into one archive: $OUT keeps
# to the device's 8 files).
OUT_MAIN=$OUT; left=$(( 575 - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT_MAIN/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -40; el
