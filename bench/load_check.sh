#!/usr/bin/env bash
# memra load on a synthetic V4-Flash-shaped folder (tools/bench/synthetic_checkpoint.cpp): the
# `read` line (every stored byte hashed, shards in parallel) cold — each shard evicted from the page
# cache with posix_fadvise(DONTNEED) first — for several thread counts, then warm.
#   bench/load_check.sh MEMRA_BIN MODEL_DIR [threads...]
set -euo pipefail
bin="$1"
dir="$2"
shift 2
threads=("${@:-1 2}")
evict() {
  python3 - "$dir" <<'PY'
import os, sys
d = sys.argv[1]
for f in os.listdir(d):
    if f.endswith(".safetensors"):
        fd = os.open(os.path.join(d, f), os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)
PY
}
echo "# machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo), $(uname -r)"
echo "# commit: $(git -C "$(dirname "$0")/.." rev-parse --short HEAD)  bin: $bin  model: $dir ($(du -sh "$dir" | cut -f1), $(ls "$dir"/*.safetensors | wc -l) shards)"
for t in ${threads[@]}; do
  evict
  /usr/bin/time -f "# wall %e s, max RSS %M KB" "$bin" -q load "$dir" --threads "$t" 2>&1 | grep -E "^read|^# wall" | sed "s/^/cold threads=$t  /"
done
/usr/bin/time -f "# wall %e s, max RSS %M KB" "$bin" -q load "$dir" 2>&1 | grep -E "^read|^# wall" | sed "s/^/warm  /"
# Baselines: the same bytes through cat, from the disk (evicted) and from the page cache.
bytes=$(cat "$dir"/*.safetensors | wc -c)
for mode in cold warm; do
  [[ $mode == cold ]] && evict
  s=$(date +%s.%N); cat "$dir"/*.safetensors > /dev/null; e=$(date +%s.%N)
  python3 -c "import sys; b=int(sys.argv[1]); t=float(sys.argv[3])-float(sys.argv[2]); print(f'baseline cat ({sys.argv[4]}): {b/1e9:.3f} GB in {t:.2f} s ({b/1e9/t:.2f} GB/s)')" \
    "$bytes" "$s" "$e" "$mode"
done
