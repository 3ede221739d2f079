# Run 60: the tree after run 59's A/B (the fused hc_pre launch taken back out: no gain in graphs;
# hc_pre's internal changes kept), with the 32k decode row's indexer at 2 entries per warp as an A/B
# (MEMRA_CUDA_INDEXER_EPW=2, the query staged in shared memory); ops, backend, gates; then ncu of the
# 32k decode step's hc_pre, indexer scores, top-k and attention: a first pass lists the launches
# (LaunchStats only) to skip the 32k prefill's, the second profiles the first decode step's.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in norm mhc topk compressor attention packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-220; done
  for x in tiny tiny-fp8; do timeout 150 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  for x in tiny; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],2) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], [round(v['ratio_to_floor'],2) for v in b['verify']], 'prefill', round(b['prefill'].get('tokens_per_s',0)), b.get('failures'))" $1 $2; }
run() { env $2 timeout 90 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2 3; do run epw4_$i MEMRA_CUDA_INDEXER_EPW=4; run epw2_$i MEMRA_CUDA_INDEXER_EPW=2; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
K='hc_pre_kernel|hc_mix_kernel|indexer_scores_wide_kernel|topk_cluster_kernel|attention_cluster_kernel'
BA="bench --contexts 32768 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json"
timeout 150 $NCU --clock-control none -k regex:"$K" --launch-count 400 --section LaunchStats --csv --page details $m -q $BA > /tmp/pass1.csv 2>/tmp/pass1.log
echo "pass1 rc=$?"; el
S=$(python3 - /tmp/pass1.csv <<'PY'
import csv,sys
ids=[]; 
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    if r['Metric Name']!='Grid Size': continue
    ids.append((int(r['ID']), r['Kernel Name'][:40], r['Metric Value'].replace(' ','')))
ids.sort()
first=[i for i,(n,name,g) in enumerate(ids) if 'indexer_scores_wide' in name and g.startswith('(1,')]
print(first[0]-3 if first else 0)
for n,name,g in ids[:3]+ids[max(0,(first[0] if first else 0)-4):(first[0] if first else 0)+8]: print(n,name,g, file=sys.stderr)
PY
)
echo "skip $S"; el
timeout 200 $NCU --clock-control none -k regex:"$K" --launch-skip $S --launch-count 10 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  --csv --page details $m -q $BA > /tmp/ncu.csv 2> /tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
python3 - /tmp/ncu.csv <<'PY' > $OUT/ncu-decode.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    k=(r['ID'],r['Kernel Name'][:80])
    by.setdefault(k,[]).append((r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none, memra bench --contexts 32768 (run 60): launches after the 32k prefill's")
for (i,name),ms in by.items():
    print(f"== launch {i} {name}")
    for n,u,v in ms:
        if any(w in n for w in ('Duration','Grid Size','Block Size','Issued Warp','Achieved Occupancy','Theoretical Occupancy','Registers','Memory Throughput','Compute (SM) Throughput','Eligible Warps','No Eligible','Warp Cycles Per Issued','Executed Instructions','Cluster Size')): print(f"   {n:52s} {v} {u}")
PY
grep -E "== launch|Duration|Grid Size|Achieved Occ|Warp Cycles Per Issued" $OUT/ncu-decode.txt | head -80; el
