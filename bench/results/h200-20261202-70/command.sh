# Run 70 (session 27's last): the whole tools/gpu-check.sh on the final tree (two group lists from
# 2 rows, both in the wide form, in one moe_stage_kernel; the tiled linear as in run 68), then ncu
# of the tiled exact linear at 32 rows (why it runs its FMAs at ~21% of the rate) on the time left
# (NCU_S seconds kept for it; NCU_S=0 leaves gpu-check all of LIMIT).
# gpu-check's files are packed into check.tar.gz ($OUT keeps to the device's 8 files).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
$m --version | head -1
OUT_MAIN=$OUT; left=$(( ${LIMIT:-560} - ${NCU_S:-100} - ($(date +%s) - T0) )); echo "gpu-check budget ${left}s"
mkdir -p /tmp/check
OUT=/tmp/check GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$left bash tools/gpu-check.sh > /tmp/check/console.txt 2>&1
tar czf $OUT/check.tar.gz -C /tmp/check . ; cat /tmp/check/summary.txt 2>/dev/null | tail -45; el
# The bench's first exact forward is its --prefill rows at once: 32 rows here, so its first tiled
# launches are a batch-32 round's linears.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
BA="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
ncu_left=$(( ${LIMIT:-560} - 10 - ($(date +%s) - T0) )); (( ncu_left > 90 )) && ncu_left=90
(( ncu_left < 30 )) && { echo "ncu: skipped (${ncu_left}s left)"; exit 0; }
timeout $ncu_left $NCU --clock-control none -k regex:linear_exact_tiled_kernel --launch-count 10 \
  --section SpeedOfLight --section WarpStateStats --section LaunchStats --section Occupancy --section MemoryWorkloadAnalysis \
  --section SchedulerStats --section InstructionStats --section ComputeWorkloadAnalysis \
  -o /tmp/lin $m -q $BA > /dev/null 2>/tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
$NCU --import /tmp/lin.ncu-rep --csv --page details > /tmp/ncu.csv 2>/dev/null
$NCU --import /tmp/lin.ncu-rep --csv --page raw --metrics 'regex:.*(stall|pipe_fma|pipe_lsu|wavefronts_mem_shared).*' > /tmp/ncu-raw.csv 2>/dev/null
python3 - /tmp/ncu.csv /tmp/ncu-raw.csv <<'PY' > $OUT/ncu-linear.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    by.setdefault((r['ID'],r['Kernel Name'][:100]),[]).append((r['Section Name'],r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none: the first 10 tiled-linear launches of memra bench --prefill 32 (a 32-row exact forward)")
for (i,name),ms in by.items():
    print(f"== launch {i} {name}")
    for sec,n,u,v in ms: print(f"   {sec[:22]:22s} {n:55s} {v} {u}")
try:
    rows=list(csv.reader(open(sys.argv[2])))
    if len(rows)>2:
        hdr=rows[0]
        print("== raw stall metrics (per launch)")
        for r in rows[2:]:
            print("  ", r[0] if r else '', {h: v for h, v in zip(hdr, r) if ('stall' in h or 'pipe' in h or 'wavefronts' in h) and v not in ('', '0')})
except Exception as e: print('raw unreadable', e)
PY
grep -E "== launch|Duration|Achieved Occ|Warp Cycles Per Issued|Issue Slots|FMA|Stall" $OUT/ncu-linear.txt | head -60; el
el
