# Run 62: ncu of the exact backend's forwards #0-#6 at 32k (fa48854; MEMRA_CUDA_PROFILE_FORWARDS,
# ncu --profile-from-start off): the table keeps the decode row's launches by grid (hc_mix 32 blocks,
# indexer 256, top-k 8, attention 128, linears, experts, route of one row); its mHC, indexer, top-k, attention
# and one-row linear launches; --clock-control none (METHOD.md); reports exported with -o.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
K='hc_pre_kernel|hc_mix_kernel|indexer_scores_wide_kernel|topk_cluster_kernel|attention_cluster_kernel|linear_one_row_kernel|moe_one_row_kernel|route_kernel'
MEMRA_CUDA_PROFILE_FORWARDS=0,1,2,3,4,5,6 timeout 240 $NCU --profile-from-start off --clock-control none -k regex:"$K" --launch-count 150 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section SchedulerStats \
  -o /tmp/r62 $m -q bench --contexts 32768 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 64 --snapshot-gib 0.05 --json > /dev/null 2>/tmp/ncu.log
echo "ncu rc=$?"; tail -3 /tmp/ncu.log
$NCU --import /tmp/r62.ncu-rep --csv --page details > /tmp/r62.csv 2>/dev/null
python3 - /tmp/r62.csv <<'PY' > $OUT/ncu-decode-32k.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    by.setdefault((r['ID'],r['Kernel Name'][:100]),[]).append((r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none, memra bench --contexts 32768, exact forward #1 (an eager decode step), run 62")
keep=('Duration','Grid Size','Block Size','Cluster Size','Registers Per Thread','Achieved Occupancy','Theoretical Occupancy','Memory Throughput','DRAM Throughput','Compute (SM) Throughput','Issued Warp Per Scheduler','Eligible Warps Per Scheduler','No Eligible','Warp Cycles Per Issued Instruction','Executed Instructions','Dynamic Shared Memory Per Block')
for (i,name),ms in by.items():
    grid=[v for n,u,v in ms if n=='Grid Size']
    if not grid: continue
    g=int(grid[0].replace(',',''))
    one_row={'hc_mix':32,'hc_pre':1,'indexer':256,'topk':8,'attention':128,'route':1}
    short=[k for k in one_row if k in name]
    if short and g!=one_row[short[0]]: continue
    print(f"== launch {i} {name}")
    for n,u,v in ms:
        if n in keep or n.startswith('Stall'): print(f"   {n:52s} {v} {u}")
PY
grep -E "== launch|Duration|Achieved Occ|Warp Cycles Per Issued|Memory Throughput" $OUT/ncu-decode-32k.txt | head -200
