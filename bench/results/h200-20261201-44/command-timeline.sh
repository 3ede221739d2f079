python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin
for v in 0 1; do MEMRA_CUDA_ATTN_SPLIT=$v $m bench --json --contexts 2048,32768 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 256 --timeline > $OUT/tl_$v.json 2>>$OUT/bench.log; done
python3 - $OUT/tl_0.json $OUT/tl_1.json <<'PY'
import json,sys
for c in (0,1):
  for f in sys.argv[1:3]:
    for s in json.load(open(f))['decode'][c]['timeline']['sites']:
      if 'attention' in s['site'] and 'hc_' not in s['site']: print(c, f[-6:], f"{s['site']:34s} {s['ms']*1000:7.1f} us")
PY
rm -f $OUT/tl_*.json
