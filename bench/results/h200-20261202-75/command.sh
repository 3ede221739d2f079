# Run 75: the register-tiled linear with 16-bit weights raw in shared memory (8ca2bef,
# MEMRA_CUDA_LINEAR_GEMM_RAW=1), beside run 73's form (the ring of run 74 reverted). Tests: ops
# linear (both forms), ops moe, backend tiny / tiny-bf16, the planted butterfly (their shared
# epilogue), memcheck / racecheck / synccheck of ops linear with the raw form; the bench A/B in one
# binary (off: MEMRA_CUDA_LINEAR_GEMM=0; new: run 73's form; raw; raw32: raw with 32-row blocks);
# ncu of the raw form's first launches at 32 rows (stalls, shared-memory wavefronts).
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
  timeout 90 $t ops --only linear --seed $seed 2>&1 | grep -E "FAIL|checks|linear bf16 4096x24 |linear bf16 2600x40 |grouped" | cut -c1-240
  MEMRA_CUDA_LINEAR_GEMM_RAW=1 timeout 90 $t ops --only linear --seed $seed 2>&1 | grep -E "FAIL|checks|linear bf16 2600x40 |grouped" | sed 's/^/raw: /' | cut -c1-240
  timeout 60 $t ops --only moe --seed $seed 2>&1 | grep -E "FAIL|checks|experts one list" | cut -c1-200
  for x in tiny tiny-bf16; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | tail -2; done
  echo "planted (lanes summed in sequence), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 60 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "FAIL|checks" | head -4 | cut -c1-240
  export MEMRA_CUDA_LINEAR_GEMM_RAW=1
  timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
  timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2
  timeout 150 $S --tool synccheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2
  unset MEMRA_CUDA_LINEAR_GEMM_RAW
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 1 --steps 8 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in off new raw raw32; do
    case $arm in off) e=MEMRA_CUDA_LINEAR_GEMM=0;; new) e=MEMRA_AB=new;; raw) e=MEMRA_CUDA_LINEAR_GEMM_RAW=1;; raw32) e="MEMRA_CUDA_LINEAR_GEMM_RAW=1 MEMRA_CUDA_LINEAR_GEMM_TILE=32";; esac
    env $e timeout 60 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 200 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites linear_exact off1=/tmp/ab/off1.json new1=/tmp/ab/new1.json raw1=/tmp/ab/raw1.json raw32_1=/tmp/ab/raw321.json \
  off2=/tmp/ab/off2.json new2=/tmp/ab/new2.json raw2=/tmp/ab/raw2.json raw32_2=/tmp/ab/raw322.json >> $OUT/ab.txt 2>&1
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
ncu_left=$(( ${LIMIT:-400} - 15 - ($(date +%s) - T0) )); (( ncu_left > 90 )) && ncu_left=90
(( ncu_left < 30 )) && { echo "ncu: skipped (${ncu_left}s left)"; exit 0; }
MEMRA_CUDA_LINEAR_GEMM_RAW=1 timeout $ncu_left $NCU --clock-control none -k regex:linear_exact_gemm_kernel --launch-count 3 \
  --section SpeedOfLight --section WarpStateStats --section Occupancy --section SchedulerStats --section InstructionStats \
  -o /tmp/lin $m -q $NB > /dev/null 2>/tmp/ncu.log; echo "ncu rc=$?"; tail -2 /tmp/ncu.log
$NCU --import /tmp/lin.ncu-rep --csv --page details > /tmp/ncu.csv 2>/dev/null
$NCU --import /tmp/lin.ncu-rep --csv --page raw --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio|sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed|l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum|l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum|smsp__inst_executed_op_shared_ld.sum' > /tmp/ncu-raw.csv 2>/dev/null
python3 - /tmp/ncu.csv /tmp/ncu-raw.csv <<'PY' > $OUT/ncu-linear.txt
import csv,sys,collections
by=collections.OrderedDict()
for r in csv.DictReader(open(sys.argv[1])):
    if 'ID' not in r: continue
    by.setdefault((r['ID'],r['Kernel Name'][:100]),[]).append((r['Section Name'],r['Metric Name'],r['Metric Unit'],r['Metric Value']))
print("ncu --clock-control none: the first register-tiled linear launches of memra bench --prefill 32 (a 32-row exact forward)")
for (i,name),ms in by.items():
    print(f"== launch {i} {name}")
    for sec,n,u,v in ms: print(f"   {sec[:22]:22s} {n:55s} {v} {u}")
try:
    rows=list(csv.reader(open(sys.argv[2])))
    hdr=rows[0]
    print("== raw counters (per launch, nonzero)")
    for r in rows[2:]:
        print("  ", {h: v for h, v in zip(hdr, r) if any(k in h for k in ('stall','pipe','wavefronts','local','shared')) and v not in ('', '0', '0.00')})
except Exception as e: print('raw unreadable', e)
PY
grep -E "== launch|Duration|Achieved Occ|Warp Cycles Per Issued|Eligible Warps|Registers Per" $OUT/ncu-linear.txt | head -24; tail -4 $OUT/ncu-linear.txt | cut -c1-1500; el
