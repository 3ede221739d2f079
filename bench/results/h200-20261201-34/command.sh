export LD_LIBRARY_PATH=build-gpu-pack/bin:${LD_LIBRARY_PATH:-}
M=build-gpu-pack/bin/memra
timeout 250 ncu --clock-control none --kernel-name regex:"moe_up_kernel|moe_down_kernel|attention_fast_kernel" --launch-count 60 \
  --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis --section Occupancy --section LaunchStats \
  $M -q bench --contexts 2048 --batches 64 --verify 6 --steps 1 --reps 1 --snapshot-gib 0.01 --json > $OUT/ncu.txt 2> $OUT/ncu.log
echo rc=$?
python3 - "$OUT/ncu.txt" <<'PY'
import re,sys
t=open(sys.argv[1]).read()
blocks=re.split(r'\n  (?=\S.*\(\d+, \d+, \d+\)x\(\d+, \d+, \d+\))', t)
for b in blocks[1:]:
    head=b.splitlines()[0][:90]
    def g(k):
        m=re.search(r'\n\s+'+re.escape(k)+r'\s+(\S+)\s+(\S+)', b)
        return (m.group(2) if m else '?')
    print(head, '| dur', g('Duration'), '| dram%', g('DRAM Throughput'), '| mem%', g('Memory Throughput'), '| occ', g('Achieved Occupancy'), '| regs', g('Registers Per Thread'), '| L1 hit', g('L1/TEX Hit Rate'))
PY
