# Run 59: run 58's kernels mended (the indexer's staged query first in shared memory, 16-byte
# aligned: run 58's Hi = 3 test rows put the float4 copy off alignment), the cluster top-k with one
# histogram per block, hc_pre's Sinkhorn sums read all at once, its collapse in masked batches and
# its rms loads in one batch: ops (every group), memcheck + racecheck of ops topk / attention / mhc,
# backend on four fixtures, gates; A/B in one binary (MEMRA_CUDA_HC_FUSE=0, MEMRA_CUDA_TOPK_CLUSTER=0);
# the timeline; ncu of the 32k decode step's hc_pre, indexer scores, top-k and attention kernels.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-220; done
  for g in topk attention mhc; do
    timeout 150 $CS --tool memcheck --error-exitcode 9 $t ops --only $g --quick --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks"
    timeout 200 $CS --tool racecheck --error-exitcode 9 $t ops --only $g --quick --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|checks"
  done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 150 $t backend models/$x 2>&1 | grep -E "FAIL|checks|PDL" | cut -c1-220 | tail -3; done
  for x in tiny tiny-fp8; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'edges', [(d.get('graph_programmatic_edges'), d.get('graph_kernel_edges')) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],2) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], [round(v['ratio_to_floor'],2) for v in b['verify']], 'prefill', round(b['prefill'].get('tokens_per_s',0)), b.get('failures'))" $1 $2; }
run() { env $2 timeout 90 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2 3; do run new$i MEMRA_CUDA_HC_FUSE=1; run nofuse$i MEMRA_CUDA_HC_FUSE=0; done
  run onetopk MEMRA_CUDA_TOPK_CLUSTER=0; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
timeout 90 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > /tmp/tl.json 2>>/tmp/bench.log
python3 - /tmp/tl.json <<'PY' > $OUT/timeline.txt
import json,sys
b=json.load(open(sys.argv[1]))
for d in b['decode']:
    print('decode b1 @', d['context'], 'measured', round(d['timeline']['measured_ms'],4), 'ms, device sum', round(d['timeline']['device_ms_sum'],4))
    for s in d['timeline']['sites']: print(f"  {s['site']:44s} {s['ms']*1000:7.1f} us")
PY
grep -E "decode b1|indexer|topk|hc_pre|hc_head" $OUT/timeline.txt; el
timeout 240 $NCU --clock-control none -k regex:"hc_pre_fused_kernel|indexer_scores_wide_kernel|topk_cluster_kernel|attention_cluster_kernel" --launch-count 24 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  --csv --page details $m -q bench --contexts 32768 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json \
  > /tmp/ncu.csv 2> /tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
python3 - /tmp/ncu.csv <<'PY' > $OUT/ncu-decode.txt
import csv,sys,collections
rows=[r for r in csv.DictReader(open(sys.argv[1])) if 'ID' in r]
by=collections.OrderedDict()
for r in rows:
    k=(r['ID'],r['Kernel Name'][:70],r.get('Grid Size',''),r.get('Block Size',''))
    by.setdefault(k,[]).append((r['Section Name'],r['Metric Name'],r['Metric Unit'],r['Metric Value']))
seen=set()
print("ncu --clock-control none, memra bench --contexts 32768 (run 59): the first decode launch of each kernel (grid of one row)")
for (i,name,grid,block),ms in by.items():
    g=grid.replace(' ','')
    decode=g.startswith('(1,') or g.startswith('(8,1,') or (name.startswith('void memra::cuda::') and 'attention_cluster' in name and g.endswith(',1,1)'))
    key=name.split('(')[0]
    if not decode or key in seen: continue
    seen.add(key)
    print(f"== launch {i} {name} grid {grid} block {block}")
    for s,n,u,v in ms:
        if any(w in n for w in ('Duration','Stall','Issued','Occupancy','Registers','Throughput','Eligible','Active Warps','No Eligible','Executed Ipc','Cluster')): print(f"   {n:60s} {v} {u}")
PY
grep -cE "== launch" $OUT/ncu-decode.txt; grep -E "== launch|Duration|Achieved Occupancy|Issued Warp" $OUT/ncu-decode.txt; el
