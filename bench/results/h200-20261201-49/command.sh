# Run 49 (final of the session): 6de08df (topk keys in registers) vs 60aac52 (old/), tests, bench with transformers, racechecks.
set -uo pipefail
python3 -c "
import lzma,shutil
for f in ('bin/libmemra_cuda.so','bin/memra','bin/memra_cuda_test','old/libmemra_cuda.so'):
    shutil.copyfileobj(lzma.open(f'build-gpu-pack/{f}.xz'), open(f'build-gpu-pack/{f}','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; t=$P/bin/memra_cuda_test; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin NCCL_NVLS_ENABLE=0
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
seed=$(date +%s); T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ $m --version | head -1
  for g in linear norm mhc topk compressor attention moe synthetic packed; do timeout 90 $t ops --only $g --seed $seed 2>&1 | grep -E "FAIL|checks|topk" | cut -c1-200; done
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do timeout 120 $t backend models/$x 2>&1 | grep -E "FAIL|checks" | tail -2; done
  for x in tiny tiny-fp8; do timeout 90 $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
  timeout 60 $CS --tool memcheck --error-exitcode 9 $t ops --only topk --seed $seed 2>&1 | grep -E "ERROR SUMMARY|checks"; el
} > $OUT/tests.txt 2>&1; cat $OUT/tests.txt
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { MEMRA_CUDA_LIB=$P/$2/libmemra_cuda.so timeout 60 $m bench $B > /tmp/$1.json 2>>/tmp/bench.log; summ /tmp/$1.json $1; }
{ for i in 1 2; do run new$i bin; run old$i old; done; el; } > $OUT/ab.txt 2>&1; cat $OUT/ab.txt
for v in bin old; do MEMRA_CUDA_LIB=$P/$v/libmemra_cuda.so timeout 60 $m bench --json --contexts 32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --timeline > /tmp/tl_$v.json 2>>/tmp/bench.log; done
python3 - /tmp/tl_old.json /tmp/tl_bin.json <<'PY' > $OUT/timeline.txt
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
print('decode b1 @ 32768, old -> new')
for k in sorted(set(o)|set(n), key=lambda k:-max(o.get(k,0),n.get(k,0)))[:12]: print(f"{k:44s} {o.get(k,0)*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
cat $OUT/timeline.txt
mkdir -p /tmp/vb; OUT=/tmp/vb BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 BENCH_ARGS=--timeline timeout 250 bash bench/gpu_bench.sh > /tmp/vb/stdout.txt 2>&1; tail -3 /tmp/vb/stdout.txt
tar czf $OUT/bench.tar.gz -C /tmp/vb . ; el
# racechecks last (they would disturb the timings), all in parallel: every op group, and the backend
mkdir -p /tmp/race; for g in linear norm mhc topk compressor attention moe synthetic packed; do
  timeout 200 $CS --tool racecheck --error-exitcode 9 --print-limit 30 $t ops --quick --only $g --seed $seed > /tmp/race/ops-$g.txt 2>&1 & done
timeout 200 $CS --tool racecheck --error-exitcode 9 --print-limit 30 $t backend models/tiny --race > /tmp/race/backend-tiny.txt 2>&1 &
wait; for f in /tmp/race/*.txt; do echo "$(basename $f): $(grep -E 'ERROR SUMMARY|RACECHECK SUMMARY|checks' $f | tail -2 | tr '\n' ' ')"; done > $OUT/racecheck.txt; el >> $OUT/racecheck.txt
tar czf $OUT/race-logs.tar.gz -C /tmp race; cat $OUT/racecheck.txt
