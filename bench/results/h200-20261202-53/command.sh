# Run 53: ncu of the 32k decode step's indexer scores and top-k (the chain that sets the CSA layer's
# time at 32k): stall reasons, issue, occupancy. --clock-control none (METHOD.md); caches flushed by replay.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
timeout 300 ncu --clock-control none -k regex:"topk_kernel|indexer_scores_kernel" --launch-count 80 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats --section InstructionStats \
  --csv --page details $m -q bench --contexts 32768 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json \
  > /tmp/ncu.csv 2> $OUT/ncu.log; echo "ncu rc=$?"; tail -3 $OUT/ncu.log
python3 - /tmp/ncu.csv <<'PY' > $OUT/ncu-decode.txt
import csv,sys,collections
rows=list(csv.DictReader(open(sys.argv[1])))
by=collections.OrderedDict()
for r in rows:
    k=(r['ID'],r['Kernel Name'][:60],r.get('Grid Size',''),r.get('Block Size',''))
    by.setdefault(k,[]).append((r['Section Name'],r['Metric Name'],r['Metric Unit'],r['Metric Value']))
for (i,name,grid,block),ms in by.items():
    if not (('topk' in name and grid.startswith('(1,')) or ('indexer' in name and grid.startswith('(1,'))): continue
    print(f"== launch {i} {name} grid {grid} block {block}")
    for s,n,u,v in ms:
        if any(w in n for w in ('Duration','Stall','Issued','Occupancy','Registers','Throughput','Eligible','Active Warps','No Eligible','Executed Ipc')): print(f"   {n:60s} {v} {u}")
PY
head -c 11000 $OUT/ncu-decode.txt; grep -c "== launch" $OUT/ncu-decode.txt
