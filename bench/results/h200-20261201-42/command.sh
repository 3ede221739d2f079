set -uo pipefail
python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack
t=$P/bin/memra_cuda_test; m=$P/bin/memra
export LD_LIBRARY_PATH=$P/bin
seed=$(date +%s)
{ for g in linear norm mhc topk compressor attention moe synthetic packed; do $t ops --only $g --seed $seed 2>&1 | tail -1; done
  $t ops --only attention --seed $seed 2>&1 | grep -E "70-row"
  for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -1; done
  $m -q gate all models/tiny --backend cuda 2>&1 | tail -1
  fs=112245; fdir=/tmp/memra-fresh-$fs
  MEMRA_PYTHON=$(command -v python3) timeout 120 tools/oracle/fresh_case.sh $fs $fdir > /dev/null 2>&1 || echo "fresh $fs: oracle failed"
  echo "fresh $fs semantics prompt 66:"; timeout 60 $m gate semantics $fdir/model --backend cuda --prompt-len 66 2>&1 | grep -E "^\[" ; } > $OUT/tests.txt 2>&1
grep -v "^$" $OUT/tests.txt | cut -c1-260
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
run() { local name=$1; shift; env "$@" $m bench $B > $OUT/$name.json 2>>$OUT/bench.log; summ $OUT/$name.json $name; }
run w1024_1 MEMRA_CUDA_ATTN_WIDE=1024; run w512_1 X=1; run w1024_2 MEMRA_CUDA_ATTN_WIDE=1024; run w512_2 X=1; run w1024_3 MEMRA_CUDA_ATTN_WIDE=1024; run w512_3 X=1
for v in 1024 512; do MEMRA_CUDA_ATTN_WIDE=$v $m bench --json --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_$v.json 2>>$OUT/bench.log; done
python3 - $OUT/tl_1024.json $OUT/tl_512.json <<'PY'
import json,sys
o,n=[{s['site']:s['ms'] for s in json.load(open(f))['decode'][0]['timeline']['sites']} for f in sys.argv[1:3]]
for k in sorted(o, key=lambda k:-o[k]):
  if 'attention' in k: print(f"decode {k:34s} {o[k]*1000:7.1f} -> {n.get(k,0)*1000:7.1f} us")
PY
rm -f $OUT/tl_*.json
