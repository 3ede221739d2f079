# Run 70 (session 27's last): the final tree (two group lists from 2 rows, both in the wide form,
# in one moe_stage_kernel; the tiled linear as in run 68). Four device starts failed before it, so
# this is the short form: tests (every ops group, backend on 4 fixtures, gate all tiny), memcheck /
# racecheck / synccheck of ops moe and linear, the V4 bench beside transformers
# (bench/gpu_bench.sh --timeline), then ncu of the tiled exact linear at 32 rows on the time left
# (LIMIT). Run 67 ran the whole gpu-check on the large-list kernels; run 69 the sanitizers on the
# small list's wide form.
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
{ $m --version | head -1; echo "seed $seed"; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  timeout 150 $t ops --seed $seed 2>&1 | grep -E "FAIL|checks|experts one list" | head -12 | cut -c1-240
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  timeout 120 $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  for g in moe linear; do
    timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
    timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2
    timeout 150 $S --tool synccheck --error-exitcode 9 --print-limit 10 $t ops --quick --only $g --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
  done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
mkdir -p /tmp/bench
env OUT=/tmp/bench BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline timeout 240 bash bench/gpu_bench.sh > /tmp/bench/console.txt 2>&1; echo "gpu_bench rc=$?"
cp /tmp/bench/table.md /tmp/bench/memra-bench.json /tmp/bench/transformers.json /tmp/bench/config.json /tmp/bench/decode_vs_context.png $OUT/ 2>/dev/null
cat /tmp/bench/table.md 2>/dev/null | head -24; tail -3 /tmp/bench/console.txt; el
# ncu: the bench's first exact forward is its --prefill rows at once (32 here), so its first tiled
# launches are a 32-row round's linears.
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
BA="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
ncu_left=$(( ${LIMIT:-200} - 15 - ($(date +%s) - T0) )); (( ncu_left > 90 )) && ncu_left=90
(( ncu_left < 30 )) && { echo "ncu: skipped (${ncu_left}s left)"; exit 0; }
timeout $ncu_left $NCU --clock-control none -k regex:linear_exact_tiled_kernel --launch-count 6 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section SchedulerStats --section InstructionStats \
  -o /tmp/lin $m -q $BA > /dev/null 2>/tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
$NCU --import /tmp/lin.ncu-rep --csv --page details > /tmp/ncu.csv 2>/dev/null
$NCU --import /tmp/lin.ncu-rep --csv --page raw --metrics 'regex:.*(stall|pipe_fma|pipe_lsu|wavefronts_mem_shared).*' > /tmp/ncu-raw.csv 2>/dev/null
python3 - /tmp/ncu.csv /tmp/ncu-raw.csv <<'PY' > $OUT/ncu-linear.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    by.setdefault((r['ID'],r['Kernel Name'][:100]),[]).append((r['Section Name'],r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none: the first tiled-linear launches of memra bench --prefill 32 (a 32-row exact forward)")
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
grep -E "== launch|Duration|Achieved Occ|Warp Cycles Per Issued|Issue Slots|Eligible" $OUT/ncu-linear.txt | head -40; el
