python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; m=$P/bin/memra; t=$P/bin/memra_cuda_test; export LD_LIBRARY_PATH=$P/bin
$m --version 2>&1 | head -1
for x in tiny tiny-bf16 tiny-fp8 tiny-fp4; do $t backend models/$x 2>&1 | tail -1; done
for x in tiny tiny-bf16; do $m -q gate all models/$x --backend cuda 2>&1 | tail -1; done
$m parity models/tiny models/tiny/dump --backend cuda 2>&1 | tail -1
$m parity models/tiny models/tiny/dump --backend cuda-fast 2>&1 | tail -1
fs=112245; fdir=/tmp/memra-fresh-$fs
MEMRA_PYTHON=$(command -v python3) timeout 120 tools/oracle/fresh_case.sh $fs $fdir > /dev/null 2>&1 || echo "fresh $fs: oracle failed"
timeout 120 $t backend $fdir/model --quick 2>&1 | tail -1
timeout 60 $m gate semantics $fdir/model --backend cuda --prompt-len 66 2>&1 | grep -E "^\[" | cut -c1-120
