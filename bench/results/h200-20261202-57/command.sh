# Run 57: hc_pre and hc_head in one launch each (the last of a row's slice blocks finishes the row)
# with the norm that follows applied inside (kernels/mhc.cu): ops (every group), a planted norm
# product order (planted/) that must FAIL ops mhc, memcheck + racecheck of ops mhc, backend on four
# fixtures, gates, and an A/B in one binary (MEMRA_CUDA_HC_FUSE=0 the old three launches).
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob,os
for f in glob.glob('build-gpu-pack/*/*.xz'):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb')); os.chmod(f[:-3], 0o755)"
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|fused" | cut -c1-220; done
  echo "planted (norm product (w*v)*r in the fused mHC), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only mhc --seed $seed 2>&1 | grep -E "FAIL|checks" | cut -c1-220 | head -8
  timeout 120 $CS --tool memcheck --error-exitcode 9 $t ops --only mhc --quick --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks"
  timeout 120 $CS --tool racecheck --error-exitcode 9 $t ops --only mhc --quick --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|checks"
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 150 $t backend models/$x 2>&1 | grep -E "FAIL|checks|PDL" | cut -c1-220 | tail -3; done
  for x in tiny tiny-fp8; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'edges', [(d.get('graph_programmatic_edges'), d.get('graph_kernel_edges')) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],2) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], [round(v['ratio_to_floor'],2) for v in b['verify']], 'prefill', round(b['prefill'].get('tokens_per_s',0)), b.get('failures'))" $1 $2; }
run() { env $2 timeout 90 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2 3; do run fuse$i MEMRA_CUDA_HC_FUSE=1; run nofuse$i MEMRA_CUDA_HC_FUSE=0; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
timeout 90 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > /tmp/tl.json 2>>/tmp/bench.log
python3 - /tmp/tl.json <<'PY' > $OUT/timeline.txt
import json,sys
b=json.load(open(sys.argv[1]))
for d in b['decode']:
    print('decode b1 @', d['context'], 'measured', round(d['timeline']['measured_ms'],4), 'ms, device sum', round(d['timeline']['device_ms_sum'],4))
    for s in d['timeline']['sites']: print(f"  {s['site']:44s} {s['ms']*1000:7.1f} us")
PY
head -80 $OUT/timeline.txt; el; tail -5 /tmp/bench.log
