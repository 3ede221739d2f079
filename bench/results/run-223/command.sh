# Run 223 (any card): logits_out against the copies at larger vocabularies. Run 222 measured it at
# the bench's vocab of 4096 (16 KB a row: −8 us a decode step). A real vocab (V4-Flash: 129280) puts
# 517 KB a row through the kernel's stores to pinned host memory over the bus, where the copy
# engine may move large rows faster: this run finds whether the kernel still wins there.
# First the backend suite on tiny (the host-path check compares the three forms by bits). Arms
# (three passes interleaved, at --vocab 4096, 32768 and 129280): base (logits_out), copies
# (MEMRA_CUDA_LOGITS_OUT=0) and hostcopy (MEMRA_CUDA_LOGITS_OUT_HOST_KIB=0: the trunk's and the
# journal's rows by the kernel, the caller's by the copy engine after the round).
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
timeout 150 "$t" backend models/tiny --quick > "$OUT/backend-tiny.txt" 2>&1
echo "backend tiny rc=$?, $(grep -c '^ok' "$OUT/backend-tiny.txt") ok, $(grep -c '^FAIL' "$OUT/backend-tiny.txt") FAIL"; grep -E 'host path' "$OUT/backend-tiny.txt" | cut -c1-200
root=$OUT
for v in 4096 32768 129280; do
  mkdir -p "$root/v$v"
  echo "== vocab $v"
  OUT=$root/v$v AB_ARGS="bench --json --vocab $v --contexts 2048 --batches 8 --verify 6,16 --steps 8 --snapshot-gib 0.05 --prefill 64 --reps 5" \
    ab_linear 3 base='' copies='MEMRA_CUDA_LOGITS_OUT=0' hostcopy='MEMRA_CUDA_LOGITS_OUT_HOST_KIB=0'
  [[ $(left) -lt 60 ]] && { echo "stopped: $(left) s left"; break; }
done
