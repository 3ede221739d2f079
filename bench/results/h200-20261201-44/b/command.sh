python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; m=$P/bin/memra; t=$P/bin/memra_cuda_test; export LD_LIBRARY_PATH=$P/bin
$t ops --only attention 2>&1 | grep -E "70-row|invariance|checks"
$t backend models/tiny-bf16 2>&1 | tail -1
for v in 0 1; do MEMRA_CUDA_ATTN_SPLIT=$v $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_$v.json 2>>$OUT/bench.log; done
python3 - $OUT/tl_0.json $OUT/tl_1.json <<'PY'
import json,sys
for c in (0,1):
  for f in sys.argv[1:3]:
    for s in json.load(open(f))['decode'][c]['timeline']['sites']:
      if 'attention' in s['site'] and 'hc_' not in s['site']: print(c, f[-6:], f"{s['site']:34s} {s['ms']*1000:7.1f} us")
PY
B="--json --contexts 2048,32768 --batches 8,32,64 --verify 6,16 --snapshot-gib 0.05 --prefill 256 --reps 2"
summ() { python3 -c "import json,sys; b=json.load(open(sys.argv[1])); print(sys.argv[2], 'decode', [round(d['ms_per_layer_token'],4) for d in b['decode']], [d['logits_xxh3'][:12] for d in b['decode']], 'batch', [round(x['tokens_per_s']) for x in b['batch']], 'verify', [round(v['ms'],3) for v in b['verify']], b.get('failures'))" $1 $2; }
for r in 1 2; do for v in 0 1; do MEMRA_CUDA_ATTN_SPLIT=$v $m bench $B > $OUT/s${v}_$r.json 2>>$OUT/bench.log; summ $OUT/s${v}_$r.json split$v; done; done
rm -f $OUT/tl_*.json
