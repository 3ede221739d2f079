# Run 80: the f32-staged register-tiled linear with planned copies (MEMRA_CUDA_LINEAR_GEMM_RAW=0)
# against the raw default, in one binary. Tests: ops linear under both, racecheck of the f32-staged
# form; the bench A/B (off: MEMRA_CUDA_LINEAR_GEMM=0, raw: defaults, f32: RAW=0), two passes.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
S=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  timeout 60 $t ops --only linear --seed 80 2>&1 | grep -E "FAIL|checks"
  MEMRA_CUDA_LINEAR_GEMM_RAW=0 timeout 60 $t ops --only linear --seed 80 2>&1 | grep -E "FAIL|checks" | sed 's/^/f32: /'
  MEMRA_CUDA_LINEAR_GEMM_RAW=0 timeout 150 $S --tool racecheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed 80 2>&1 | grep -E "RACECHECK SUMMARY|checks" | tail -2 | sed 's/^/f32: /'
  MEMRA_CUDA_LINEAR_GEMM_RAW=0 timeout 120 $S --tool memcheck --error-exitcode 9 --print-limit 10 $t ops --quick --only linear --seed 80 2>&1 | grep -E "ERROR SUMMARY|checks" | tail -2 | sed 's/^/f32: /'
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
BA="bench --json --contexts 2048 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3 --steps 8 --timeline"
mkdir -p /tmp/ab
for pass in 1 2; do
  for arm in off raw f32; do
    case $arm in off) e=MEMRA_CUDA_LINEAR_GEMM=0;; raw) e=MEMRA_AB=raw;; f32) e=MEMRA_CUDA_LINEAR_GEMM_RAW=0;; esac
    env $e timeout 60 $m $BA > /tmp/ab/$arm$pass.json 2>/tmp/ab/$arm$pass.err; echo "arm $arm pass $pass rc=$?"
  done
done > $OUT/ab.txt 2>&1
python3 bench/ab_summary.py --sites linear_exact off1=/tmp/ab/off1.json raw1=/tmp/ab/raw1.json f32_1=/tmp/ab/f321.json \
  off2=/tmp/ab/off2.json raw2=/tmp/ab/raw2.json f32_2=/tmp/ab/f322.json >> $OUT/ab.txt 2>&1
python3 - /tmp/ab >> $OUT/ab.txt <<'PY'
import json,sys
print("C layer's wq_b / wo_a / wo_b (us) at 32 | 64 rows, pass 1 and 2")
for p in (1, 2):
    for arm in ['off','raw','f32']:
        try: doc=json.load(open(f'{sys.argv[1]}/{arm}{p}.json'))
        except Exception: print(arm, p, 'unreadable'); continue
        out=[]
        for b in doc['batch']:
            if b['batch'] in (32,64):
                st={s['site']:s['ms']*1000 for s in b['timeline']['sites']}
                out.append(' '.join(f"{st.get('C:linear_exact ('+k+')',0):.1f}" for k in ('wq_b','wo_a, grouped','wo_b')))
        print(f"  {arm}{p}", ' | '.join(out))
PY
tar -czf $OUT/ab-json.tgz -C /tmp ab; grep -v "(cuda-fast)" $OUT/ab.txt | tail -40; el
