python3 -c "
import lzma,shutil
shutil.copyfileobj(lzma.open('build-gpu-pack/bin/libmemra_cuda.so.xz'), open('build-gpu-pack/bin/libmemra_cuda.so','wb'))"
chmod +x build-gpu-pack/bin/*
P=$PWD/build-gpu-pack; m=$P/bin/memra; export LD_LIBRARY_PATH=$P/bin
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
S="--section SpeedOfLight --section LaunchStats --section Occupancy --section WarpStateStats --section SchedulerStats"
timeout 250 $NCU --clock-control none -k regex:"split_" --launch-skip 8 --launch-count 4 $S $m bench --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --steps 4 --reps 1 > $OUT/ncu_split.txt 2>&1
MEMRA_CUDA_ATTN_SPLIT=0 timeout 200 $NCU --clock-control none -k regex:"attention_kernel" --launch-skip 4 --launch-count 2 $S $m bench --contexts 2048 --batches 8 --verify 6 --snapshot-gib 0.05 --prefill 64 --steps 4 --reps 1 > $OUT/ncu_one.txt 2>&1
for f in $OUT/ncu_split.txt $OUT/ncu_one.txt; do echo "== $f"; grep -E "split_|attention_kernel|Duration|Elapsed Cycles|SM Frequency|Memory Throughput|Achieved Occupancy|Registers Per|Warp Cycles Per Issued|Block Size|Grid Size|Dynamic Shared|No Eligible|Issued Warp|==PROF==|==ERROR==" $f | head -70; done
