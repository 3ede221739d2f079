# Run 61 (final of session 25): the planted cluster top-k fault (planted/: offsets counted through
# the block's own rank) must FAIL ops topk; ncu of the 32k decode step's hc_pre, hc_mix, indexer
# scores, top-k and attention (a first pass lists the launches to skip the 32k prefill's, the second
# profiles the decode step's; reports exported with -o, the bench's own stdout apart); then the whole
# tools/gpu-check.sh (every GPU test, gate, sanitizer, the V4 bench beside transformers).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0
{ echo "=== planted (kernels/topk.cu cluster emission: r <= rank), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $P/bin/memra_cuda_test ops --only topk --seed 61 2>&1 | grep -E "FAIL|checks" | cut -c1-240
} > $OUT/planted.txt 2>&1; cat $OUT/planted.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
K='hc_pre_kernel|hc_mix_kernel|indexer_scores_wide_kernel|topk_cluster_kernel|attention_cluster_kernel'
BA="bench --contexts 32768 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json"
export LD_LIBRARY_PATH=$P/bin
timeout 60 $NCU --clock-control none -k regex:"$K" --launch-count 400 --section LaunchStats -o /tmp/pass1 $m -q $BA > /dev/null 2>/tmp/pass1.log
$NCU --import /tmp/pass1.ncu-rep --csv --page details > /tmp/pass1.csv 2>/dev/null
S=$(python3 - /tmp/pass1.csv <<'PY'
import csv,sys
ids=[]
for r in csv.DictReader(open(sys.argv[1])):
    if r.get('Metric Name')=='Grid Size': ids.append((int(r['ID']), r['Kernel Name'], r['Metric Value'].replace(' ','')))
ids.sort()
first=[i for i,(n,name,g) in enumerate(ids) if 'indexer_scores_wide' in name and g.startswith('(1,')]
print(max(first[0]-3,0) if first else -1)
PY
)
echo "ncu: skip $S of the listed launches" > $OUT/ncu-decode.txt
if [[ "$S" -ge 0 ]]; then
  timeout 90 $NCU --clock-control none -k regex:"$K" --launch-skip $S --launch-count 10 \
    --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
    -o /tmp/pass2 $m -q $BA > /dev/null 2>/tmp/ncu.log
  $NCU --import /tmp/pass2.ncu-rep --csv --page details > /tmp/ncu.csv 2>/dev/null
  python3 - /tmp/ncu.csv <<'PY' >> $OUT/ncu-decode.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    by.setdefault((r['ID'],r['Kernel Name'][:90]),[]).append((r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none, memra bench --contexts 32768 (run 61): launches after the 32k prefill's")
for (i,name),ms in by.items():
    print(f"== launch {i} {name}")
    for n,u,v in ms:
        if any(w in n for w in ('Duration','Grid Size','Block Size','Issued Warp','Achieved Occupancy','Theoretical Occupancy','Registers','Memory Throughput','Compute (SM) Throughput','Eligible Warps','No Eligible','Warp Cycles Per Issued','Executed Instructions','Cluster Size')): print(f"   {n:52s} {v} {u}")
PY
fi
grep -E "skip|== launch|Duration|Achieved Occ" $OUT/ncu-decode.txt | head -40
unset LD_LIBRARY_PATH
GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=440 bash tools/gpu-check.sh
