# Run 93: is Nsight Systems on the lent machine? If so, the graphed decode step's kernels as graph
# nodes (--cuda-graph-trace=node): when each starts and ends inside the graph, which the timeline
# (each launch alone, PDL off) cannot show.
set -uo pipefail
cd "$(dirname "$0")/../../.."
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack; m=$P/bin/memra; export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s); el() { echo "t=$(( $(date +%s) - T0 ))s"; }
{ for c in nsys ncu; do echo "$c: $(command -v $c || echo none)"; done
  ls -d /usr/local/cuda*/bin/nsys /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null
  NSYS=$(command -v nsys || ls /opt/nvidia/nsight-systems*/bin/nsys /usr/local/cuda*/bin/nsys /usr/local/cuda*/nsight-systems*/bin/nsys 2>/dev/null | head -1)
  echo "using: ${NSYS:-none}"
  if [[ -n "$NSYS" ]]; then
    $NSYS --version
    timeout 200 $NSYS profile --cuda-graph-trace=node --trace=cuda -o /tmp/dec -f true \
      $m bench --json --contexts 2048 --batches 8 --verify 6 --prefill 64 --reps 1 --steps 4 --snapshot-gib 0.01 > /tmp/dec.json 2>/tmp/dec.err
    echo "profile rc=$?"; tail -3 /tmp/dec.err
    timeout 120 $NSYS stats --report cuda_gpu_trace --format csv -o /tmp/dec /tmp/dec.nsys-rep > /tmp/stats.txt 2>&1; echo "stats rc=$?"
    ls -la /tmp/dec* ; xz -T0 -6 -c /tmp/dec_cuda_gpu_trace.csv > $OUT/gpu_trace.csv.xz 2>/dev/null
  fi
  el
} > $OUT/probe.txt 2>&1; cat $OUT/probe.txt
