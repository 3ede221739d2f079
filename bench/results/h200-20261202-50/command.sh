# Run 50: programmatic dependent launch on every kernel (kernels/launch.cuh), the one-row linear's
# weights loaded before its wait, the indexer's butterflies as warp_sum_many; A/B with
# MEMRA_CUDA_PDL=0 in the same binary; a planted indexer order (planted/) must FAIL ops attention.
set -uo pipefail
cd "$(dirname "$0")/../../.."
python3 -c "
import lzma,shutil,glob
for f in glob.glob('build-gpu-pack/**/*.xz', recursive=True):
    shutil.copyfileobj(lzma.open(f), open(f[:-3],'wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1; nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv,noheader; uname -r
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|indexer" | cut -c1-260; done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 150 $t backend models/$x 2>&1 | grep -E "FAIL|checks|PDL" | cut -c1-260 | tail -3; done
  for x in tiny tiny-fp8; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  echo "planted (indexer butterfly levels ascending), expect FAIL:"
  LD_LIBRARY_PATH=$P/planted:$P/bin timeout 90 $t ops --only attention --quick --seed $seed 2>&1 | grep -E "indexer|checks" | cut -c1-260
  timeout 90 $CS --tool memcheck --error-exitcode 9 $t ops --only attention --quick --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks"
  timeout 120 $CS --tool racecheck --error-exitcode 9 $t ops --only attention --quick --seed $seed 2>&1 | grep -E "RACECHECK SUMMARY|ERROR SUMMARY|checks"
  el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [round(d['ratio_to_floor'],3) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'edges', [(d.get('graph_programmatic_edges'), d.get('graph_kernel_edges')) for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], [round(x['ratio_to_floor'],2) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], [round(v['ratio_to_floor'],2) for v in b['verify']], 'prefill', round(b['prefill'].get('tokens_per_s',0)), b.get('failures'))" $1 $2; }
run() { env $3 timeout 90 $m bench $B > $OUT/$1.json 2>>/tmp/bench.log; summ $OUT/$1.json $1; }
{ for i in 1 2; do run pdl$i bin MEMRA_CUDA_PDL=1; run nopdl$i bin MEMRA_CUDA_PDL=0; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
timeout 90 $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > /tmp/tl.json 2>>/tmp/bench.log
python3 - /tmp/tl.json <<'PY' > $OUT/timeline.txt
import json,sys
b=json.load(open(sys.argv[1]))
for d in b['decode']:
    print('decode b1 @', d['context'], 'measured', round(d['timeline']['measured_ms'],4), 'ms, device sum', round(d['timeline']['device_ms_sum'],4))
    for s in d['timeline']['sites'][:14]: print(f"  {s['site']:44s} {s['ms']*1000:7.1f} us")
p=b['prefill'].get('timeline')
if p:
    print('prefill'); [print(f"  {s['site']:44s} {s['ms']*1000:8.1f} us") for s in p['sites'][:8]]
PY
cat $OUT/timeline.txt; el
