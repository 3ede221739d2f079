# Run 77: the raw-weight register-tiled linear with its copies planned once per block and bf16
# decoded by its bits (794f402). Tests: ops linear under forms a, b, c; racecheck of b; the bench
# A/B in one binary (off, a, b, c); ncu of form b at 32 rows.
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
{ $m --version | head -1; echo "seed $seed"
  timeout 60 $t ops --only linear --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-240
  for f in a b c; do
    MEMRA_CUDA_LINEAR_GEMM_RAW=1 MEMRA_CUDA_LINEAR_GEMM_RAWFORM=$f timeout 60 $t ops --only linear --seed $seed 2>&1 | grep -E "FAIL|checks|linear bf16 2600x40 |grouped" | sed "s/^/raw $f: /" | cut -c1-240
  done
  for f in b; do
    export MEMRA_CUDA_LINEAR_GEMM_RAW=1 MEMRA_CUDA_LINEAR_GEMM_RAWFORM=$f
    timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2 | sed "s/^/raw $f: /"
    timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2 | sed "s/^/raw $f: /"
  done
  unset MEMRA_CUDA_LINEAR_GEMM_RAW MEMRA_CUDA_LINEAR_GEMM_RAWFORM
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 1 --steps 8 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in off a b c; do
    case $arm in off) e=MEMRA_CUDA_LINEAR_GEMM=0;; new) e=MEMRA_AB=new;; *) e="MEMRA_CUDA_LINEAR_GEMM_RAW=1 MEMRA_CUDA_LINEAR_GEMM_RAWFORM=$arm";; esac
    env $e timeout 60 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err
    echo "arm $arm pass $pass rc=$? $(tail -c 120 /tmp/ab/$arm$pass.err | tr '\n' ' ')"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites linear_exact off1=/tmp/ab/off1.json a1=/tmp/ab/a1.json b1=/tmp/ab/b1.json c1=/tmp/ab/c1.json \
  off2=/tmp/ab/off2.json a2=/tmp/ab/a2.json b2=/tmp/ab/b2.json c2=/tmp/ab/c2.json 2>&1 | grep -v "^  .*decode\|prefill" >> $OUT/ab.txt
python3 - /tmp/ab >> $OUT/ab.txt <<'PY'
import json,sys
print("wq_b / wo_a / wo_b at 32 and 64 rows (us, C layer), pass 1")
for arm in ['off','a','b','c']:
    try: doc=json.load(open(f'{sys.argv[1]}/{arm}1.json'))
    except Exception as e: print(arm,'unreadable'); continue
    out=[]
    for b in doc['batch']:
        if b['batch'] in (32,64):
            st={s['site']:s['ms']*1000 for s in b['timeline']['sites']}
            out.append(f"b{b['batch']}: "+' '.join(f"{st.get('C:linear_exact ('+k+')',0):.1f}" for k in ('wq_b','wo_a, grouped','wo_b')))
    print(f"  {arm:4s}", ' | '.join(out))
PY
tar -czf $OUT/ab-json.tgz -C /tmp ab; cat $OUT/ab.txt; el
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
NB="bench --contexts 2048 --batches 8 --verify 6 --steps 2 --reps 1 --prefill 32 --snapshot-gib 0.05 --json"
MET='regex:smsp__average_warps_issue_stalled_.*_per_issue_active.ratio|sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed|l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum|l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum|smsp__inst_executed_op_shared_ld.sum|smsp__inst_executed.sum|sm__warps_active.avg.pct_of_peak_sustained_active|gpu__time_duration.sum'
for f in b; do
  MEMRA_CUDA_LINEAR_GEMM_RAW=1 MEMRA_CUDA_LINEAR_GEMM_RAWFORM=$f timeout 60 $NCU --clock-control none -k regex:linear_exact_gemm_raw --launch-count 1 \
    --metrics "$MET" -o /tmp/lin$f $m -q $NB > /dev/null 2>/tmp/ncu$f.log; echo "ncu $f rc=$?"
  $NCU --import /tmp/lin$f.ncu-rep --csv --page raw > /tmp/ncu$f.csv 2>/dev/null
  python3 - /tmp/ncu$f.csv $f <<'PY'
import csv,sys
rows=list(csv.reader(open(sys.argv[1])))
if len(rows)<3: print(sys.argv[2], 'no rows'); sys.exit()
hdr=rows[0]
for r in rows[2:]:
    d={h:v for h,v in zip(hdr,r)}
    print(f"== form {sys.argv[2]}: {d.get('Kernel Name','')[:90]}")
    for h,v in d.items():
        if any(k in h for k in ('stalled','pipe_fma','shared','inst_executed','warps_active','duration')) and v not in ('','0','0.000000'):
            print(f"   {h.replace('smsp__average_warps_issue_stalled_','stall ').replace('_per_issue_active.ratio','')}: {v}")
PY
done > $OUT/ncu-linear.txt 2>&1; cat $OUT/ncu-linear.txt; el
