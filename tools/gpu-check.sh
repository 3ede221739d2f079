#!/usr/bin/env bash
# tools/gpu-check.sh: every GPU check of the CUDA backend in one device call, in under 9 minutes.
#
#   here (dev machine):  tools/gpu-check.sh --pack
#       builds build-cuda (Release, sm_90a) and packs what the GPU machine needs into build-gpu-pack/:
#       bin/{memra, libmemra_cuda.so, memra_cuda_test} (xz-compressed) and deps/ (the header-only libraries and their
#       CMake files, for a rebuild there). Carry build-gpu-pack (or build-cuda itself).
#   on the GPU machine:  bash tools/gpu-check.sh      (--unpack [PACK_DIR …]: only unpack packed binaries)
#       uses build-gpu-pack/bin, else build-cuda/; when those binaries do not run there it builds
#       build-gpu/ with cmake + ninja (deps from build-gpu-pack/deps). Writes every log under $OUT
#       (≤ 8 files, each ≤ 16 MB) and prints a summary table last.
#
# Steps, in order of value (each bounded by `timeout`, later steps skipped when time runs short):
#   env        nvidia-smi, driver, runtime (Firecracker / gVisor), ldd, compute-sanitizer presence
#   ops        memra_cuda_test ops: op parity of every site against its CPU twin (poisoned outputs);
#              group packed: FP8/FP4 packed kernels == bf16 kernels on the dequantised weights (bits)
#   backend    memra_cuda_test backend: cuda vs cpu logits, chunk widths 1..64, batches, verify,
#              restore, cpu<->cuda state exchange, two GPUs == one GPU, cuda-fast vs cpu; on the
#              quantised fixtures (tiny-fp8, tiny-fp4) also the packed device weight bytes
#   gates      memra gate all --backend cuda (restore, chunk, semantics, parity, fused-moe) on
#              models/tiny, tiny-bf16, tiny-fp8 and tiny-fp4, one GPU and --devices 0,1 when two are present
#   speculative  gate speculative (trained tiny drafters) on cuda, one GPU and two; bench/speculative.sh
#              on cuda (tau, speed-up); drafter-restore of the released-style drafter
#   fresh      GPU_CHECK_FRESH (3) fresh random checkpoints made by the oracle here: parity with cuda
#              and cuda-fast, chunk semantics at 66 and 160 tokens, backend --quick
#   bandwidth  snapshot/restore of a ≥ 1 GiB state of V4-Flash's layout vs pinned-copy bandwidth
#   v4 bench   memra bench --timeline at V4-Flash layer geometry beside transformers (bench.tar.gz:
#              memra-bench.json, transformers.json, table.md, decode_vs_context.png, logs)
#   sanitizer  compute-sanitizer memcheck and racecheck (ops, backend), --quick / --race inputs
# NVLink multicast stays off (NCCL_NVLS_ENABLE=0): memra does not use NCCL, the variable guards anyway.
set -uo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$root" || exit 2
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1

# Packed binaries (--pack) travel xz-compressed: unpack each once (python3's lzma: the image may
# lack xz). `--unpack [PACK_DIR …]` does only this, for a device run's own command
# (bench/results/*/command.sh), on build-gpu-pack or on the packs it names (an older build carried
# beside it for an A/B of two binaries).
unpack_pack() {
  local f dir
  for dir in "${@:-build-gpu-pack}"; do
    for f in "$dir"/*/*.xz; do
      [[ -f "$f" && ! -f "${f%.xz}" ]] || continue
      python3 -c 'import lzma, shutil, sys; shutil.copyfileobj(lzma.open(sys.argv[1]), open(sys.argv[2], "wb"))' "$f" "${f%.xz}" &&
        chmod +x "${f%.xz}"
    done
  done
}
if [[ "${1:-}" == "--unpack" ]]; then
  shift
  unpack_pack "$@"
  exit 0
fi

if [[ "${1:-}" == "--pack" ]]; then
  set -e
  # PACK_BUILD=DIR packs an existing CUDA build (e.g. build, sm_90) instead of building build-cuda.
  pb=${PACK_BUILD:-build-cuda}
  if [[ -z "${PACK_BUILD:-}" ]]; then
    cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a >/dev/null
    nice cmake --build build-cuda --target memra memra_cuda memra_cuda_test
  fi
  rm -rf build-gpu-pack
  mkdir -p build-gpu-pack/bin build-gpu-pack/deps/include build-gpu-pack/deps/share/cmake build-gpu-pack/deps/lib/cmake
  cp "$pb/memra" "$pb/libmemra_cuda.so" "$pb/test/memra_cuda_test" build-gpu-pack/bin/
  strip --strip-debug build-gpu-pack/bin/*
  # memra_core links PCRE2 (the tokenizer) and libsodium (keyed state tags): carry them in case the
  # GPU image lacks them
  for lib in libpcre2-8 libsodium; do
    so=$(ldd "$pb/memra" | awk -v l="$lib" '$0 ~ l {print $3}')
    [[ -n "$so" ]] && cp -L "$so" build-gpu-pack/bin/
  done
  cp -r /usr/include/CLI /usr/include/nlohmann /usr/include/catch2 /usr/include/xxhash.h build-gpu-pack/deps/include/
  cp -r /usr/share/cmake/CLI11 /usr/share/cmake/nlohmann_json build-gpu-pack/deps/share/cmake/
  cp -r /usr/lib/cmake/Catch2 build-gpu-pack/deps/lib/cmake/
  # xz: the working tree and what it carries travel within 64 MiB (the binaries are ~22 MB, ~5 packed)
  xz -T0 -6 -f build-gpu-pack/bin/memra build-gpu-pack/bin/libmemra_cuda.so build-gpu-pack/bin/memra_cuda_test
  du -sh build-gpu-pack
  echo "carry build-gpu-pack; on the GPU machine run: bash tools/gpu-check.sh"
  exit 0
fi

OUT=${OUT:-$root/gpu-check-out}
mkdir -p "$OUT"
start=$(date +%s)
budget=${GPU_CHECK_BUDGET_S:-530}  # the whole script stays under 9 minutes
elapsed() { echo $(( $(date +%s) - start )); }
left() { echo $(( budget - $(elapsed) )); }
declare -a summary=()
note() { summary+=("$(printf '%-34s %-8s %s' "$1" "$2" "$3")"); }

# run NAME LOGFILE SECONDS CMD...: runs with a timeout (never past the budget), appends to LOGFILE,
# records PASS/FAIL/SKIP/TIMEOUT with the last line that says why.
run() {
  local name=$1 log=$2 secs=$3; shift 3
  local rem; rem=$(left)
  if [[ -n "${no_gpu:-}" && "$name" != host* ]]; then note "$name" SKIP "no CUDA device"; return 0; fi
  if (( rem < 20 )); then note "$name" SKIP "out of time budget"; return 0; fi
  (( secs > rem - 10 )) && secs=$(( rem - 10 ))
  echo "=== $name: $* (timeout ${secs}s, t=$(elapsed)s)" >> "$OUT/$log"
  local t0 rc from; t0=$(date +%s); from=$(( $(wc -l < "$OUT/$log") + 1 ))
  timeout --kill-after=5 "$secs" "$@" >> "$OUT/$log" 2>&1; rc=$?
  local dt=$(( $(date +%s) - t0 ))
  # why: from this step's own output only (the log is shared with the steps before it)
  local why; why=$(tail -n "+$from" "$OUT/$log" | grep -E '^(== |\[|FAIL|SKIPPED|memra: error|memra_cuda_test: error|========= ERROR SUMMARY)' | tail -1 | cut -c1-90)
  case $rc in
    0) note "$name" PASS "${dt}s ${why}" ;;
    77) note "$name" SKIP "${dt}s ${why}" ;;
    124|137) note "$name" TIMEOUT "after ${secs}s" ;;
    # parity found nothing wrong but compared too few rows (an early in-band flip): no verdict
    1) if [[ "$why" == *"INCONCLUSIVE"* ]]; then note "$name" INCONCLUSIVE "${dt}s ${why}"; else note "$name" FAIL "rc=$rc ${dt}s ${why}"; fi ;;
    *) note "$name" FAIL "rc=$rc ${dt}s ${why}" ;;
  esac
  echo "=== $name: rc=$rc in ${dt}s" >> "$OUT/$log"
  return $rc
}

# ---- env -----------------------------------------------------------------------------------
{
  echo "date: $(date -u +%FT%TZ)"
  echo "host: $(uname -a)"
  if uname -r | grep -q -- '-fc'; then echo "runtime: firecracker (uname -r $(uname -r))"
  elif dmesg 2>/dev/null | grep -qi gvisor || uname -r | grep -q '^4\.4\.0'; then echo "runtime: gvisor (uname -r $(uname -r))"
  else echo "runtime: unknown (uname -r $(uname -r))"; fi
  nvidia-smi 2>&1 || echo "nvidia-smi failed"
  nvidia-smi topo -m 2>&1 | head -20
  echo "nvcc: $(nvcc --version 2>/dev/null | tail -1)"
  echo "cmake: $(cmake --version 2>/dev/null | head -1), ninja: $(ninja --version 2>/dev/null)"
  echo "compute-sanitizer: $(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null || echo none)"
  echo "nproc: $(nproc), memory: $(grep MemTotal /proc/meminfo)"
} > "$OUT/env.txt" 2>&1
gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
runtime=$(grep '^runtime:' "$OUT/env.txt" | cut -d' ' -f2)

# ---- binaries ------------------------------------------------------------------------------
unpack_pack
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/cuda/lib64:/usr/local/cuda/lib"
bin=""
for cand in build-gpu-pack/bin build-cuda; do
  if [[ -x "$cand/memra" && -f "$cand/libmemra_cuda.so" ]]; then bin=$cand; break; fi
done
test_bin() { [[ -x "$bin/memra_cuda_test" ]] && echo "$bin/memra_cuda_test" || echo "$bin/test/memra_cuda_test"; }
# The binaries work here when they start and the CUDA library loads (a machine without a GPU gets
# as far as "no CUDA device", which is an answer, not a load failure).
works() {
  [[ -n "$bin" ]] || return 1
  LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" "$bin/memra" --version >> "$OUT/env.txt" 2>&1 || return 1
  LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" "$bin/memra" devices >> "$OUT/env.txt" 2>&1 || return 1
  ! grep -q 'cannot be loaded' <(LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" "$bin/memra" devices 2>&1) || return 1
  LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" ldd "$bin/libmemra_cuda.so" "$(test_bin)" >> "$OUT/env.txt" 2>&1
  ! LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" ldd "$bin/libmemra_cuda.so" "$(test_bin)" 2>&1 | grep -q 'not found'
}
if works; then
  note "binaries" PASS "carried $bin ($(LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH" "$bin/memra" --version 2>&1 | head -1))"
else
  echo "carried binaries (${bin:-none}) do not run here: building build-gpu" >> "$OUT/env.txt"
  deps=""
  [[ -d build-gpu-pack/deps ]] && deps="-DCMAKE_PREFIX_PATH=$root/build-gpu-pack/deps"
  run "build (fallback)" build.txt 300 bash -c "cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90a $deps && cmake --build build-gpu --target memra memra_cuda memra_cuda_test -j $(nproc)"
  bin=build-gpu
  works || { note "binaries" FAIL "neither the carried nor a local build runs (env.txt, build.txt)"; }
fi
export LD_LIBRARY_PATH="$bin:$LD_LIBRARY_PATH"
memra="$bin/memra"
ctest_bin=$(test_bin)
version=$("$memra" --version 2>&1 | head -1)
"$memra" devices >> "$OUT/env.txt" 2>&1
if ! "$memra" devices 2>/dev/null | grep -q '^cuda:0'; then
  note "devices" SKIP "memra sees no CUDA device: $("$memra" devices 2>&1 | head -1 | cut -c1-70)"
  gpus=0
fi

# ---- tests ---------------------------------------------------------------------------------
seed=$(date +%s)
run "host logic (no GPU needed)" ops.txt 60 "$ctest_bin" host models/tiny models/tiny-bf16 models/tiny-fp8 models/tiny-fp4
(( gpus == 0 )) && no_gpu=1  # nothing below can run
# one process per op group: a sticky CUDA fault in one group cannot hide the others
for group in linear norm mhc topk compressor attention moe synthetic hash packed; do
  run "ops $group (seed $seed)" ops.txt 60 "$ctest_bin" ops --only "$group" --seed "$seed"
done
for model in models/tiny models/tiny-bf16 models/tiny-fp8 models/tiny-fp4; do
  if ! run "backend $(basename $model)" backend.txt 120 "$ctest_bin" backend "$model"; then
    # localise a CUDA fault: every launch synchronised, so the error names its kernel
    run "backend $(basename $model) --quick SYNC=1" backend.txt 60 env MEMRA_CUDA_SYNC=1 "$ctest_bin" backend "$model" --quick
  fi
done
for model in models/tiny models/tiny-bf16 models/tiny-fp8 models/tiny-fp4; do
  # gate all on an exact CUDA backend: restore, chunk, semantics (cuda-fast vs cuda), parity, fused-moe
  run "gate all $(basename $model) cuda" gates.txt 90 "$memra" -q gate all "$model" --backend cuda
  if (( gpus >= 2 )); then
    run "gate all $(basename $model) cuda 0,1" gates.txt 90 "$memra" -q gate all "$model" --backend cuda --devices 0,1
  fi
done
(( gpus >= 2 )) || note "gates --devices 0,1" SKIP "$gpus GPU visible"
# speculative decoding on the GPU (issue 12): lossless against plain greedy on the exact
# realization, rejected drafts rolled back in the device state; the trained pairs on their trunks
# (models/tiny: random, tau < 2; models/tiny-trained: learnable), one GPU and two; the
# drafter-restore gate through a state file; bench/speculative.sh on cuda (tau, tokens/s and the
# speed-up of every pair at blocks 2-16, each run checked lossless: the statistics, once)
for pair in tiny:tiny-dspark-trained tiny-trained:tiny-trained-dspark tiny-trained:tiny-trained-dflash; do
  t=${pair%%:*} d=${pair#*:}
  [[ -d "models/drafters/$d" ]] || continue
  run "speculative $t+$d cuda" gates.txt 60 "$memra" -q gate speculative "models/$t" --drafter "models/drafters/$d" \
    --tokens models/prompt.txt --backend cuda
done
run "bench speculative cuda" gates.txt 150 env OUT="${TMPDIR:-/tmp}" bench/speculative.sh "$(dirname "$memra")" 2 96 3 cuda
run "drafter-restore tiny-dspark-released cuda" gates.txt 60 "$memra" -q gate drafter-restore models/tiny-dspark-released \
  --drafter models/tiny-dspark-released --backend cuda
if (( gpus >= 2 )); then
  run "speculative tiny-dspark-trained cuda 0,1" gates.txt 60 "$memra" -q gate speculative models/tiny \
    --drafter models/drafters/tiny-dspark-trained --tokens models/prompt.txt --backend cuda --devices 0,1
fi
# fresh oracle checkpoints, made here by the oracle (this machine has torch and transformers): the
# exact CUDA realization against transformers on geometry memra has never seen; cuda-fast against
# transformers under parity's decision rules (-v: every flip with its margin and band); the
# chunk-semantics gate (cuda-fast monolithic vs cuda chunk-1) at 66 and 160 tokens
if python3 -c 'import torch, transformers, safetensors' 2>/dev/null; then
  for k in $(seq 1 "${GPU_CHECK_FRESH:-3}"); do
    fs=$(( seed % 1000000 + k )); fdir=${TMPDIR:-/tmp}/memra-fresh-$fs
    if run "fresh case $fs (oracle)" gates.txt 90 env MEMRA_PYTHON="$(command -v python3)" tools/oracle/fresh_case.sh "$fs" "$fdir"; then
      run "parity fresh $fs --backend cuda" gates.txt 60 "$memra" parity "$fdir/model" "$fdir/dump" --backend cuda
      run "parity fresh $fs --backend cuda-fast" gates.txt 60 "$memra" parity "$fdir/model" "$fdir/dump" --backend cuda-fast -v
      for p in 66 160; do
        run "semantics fresh $fs prompt $p" gates.txt 60 "$memra" gate semantics "$fdir/model" --backend cuda --prompt-len "$p"
      done
      run "backend fresh $fs --quick" backend.txt 90 "$ctest_bin" backend "$fdir/model" --quick
    fi
  done
else
  note "fresh oracle checkpoints" SKIP "no torch/transformers/safetensors for python3 here"
fi
run "bandwidth (>= 1 GiB V4-Flash state)" bandwidth.txt 90 "$ctest_bin" bandwidth v4-flash --gib 1.0
# issue 13's benchmark at V4-Flash layer geometry: memra bench --timeline, transformers on the same
# weights, the table and the plot (bench/gpu_bench.sh), packed into one file so that $OUT keeps to
# the device's 8 files; GPU_CHECK_BENCH=0 leaves it out
if [[ "${GPU_CHECK_BENCH:-1}" == 1 ]]; then
  bdir=${TMPDIR:-/tmp}/memra-v4-bench
  rm -rf "$bdir" && mkdir -p "$bdir"
  run "v4 bench (memra vs transformers)" gates.txt 180 env OUT="$bdir" BIN="$bin" BENCH_TIMEOUT=90 TF_TIMEOUT=150 MARGINAL_TIMEOUT=45 \
    BENCH_ARGS=--timeline bash bench/gpu_bench.sh
  tar czf "$OUT/bench.tar.gz" -C "$bdir" . 2>/dev/null || note "v4 bench archive" FAIL "tar of $bdir failed"
fi

sanitizer=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [[ "$runtime" == gvisor ]]; then
  note "compute-sanitizer" SKIP "gVisor runtime: no memory checker"
elif [[ -x "$sanitizer" ]]; then
  run "memcheck ops --quick" sanitizer.txt 100 "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 30 \
    "$ctest_bin" ops --quick --seed "$seed"
  # racecheck of every op group at once (one process per group, in parallel): one process ran past
  # 100 s once the cluster attention and the one-row MoE were tested (run 48). tools/racecheck.sh
  # fails on a hazard in any kernel but cuBLAS's own (nvjet_*, whose hazards run 163 found).
  run "racecheck ops --quick" sanitizer.txt 200 bash -c 's=$1 t=$2 seed=$3; shift 3; pids=()
    for g in "$@"; do bash tools/racecheck.sh "$s" "$t" ops --quick --only "$g" --seed "$seed" \
      > "${TMPDIR:-/tmp}/race-$g.txt" 2>&1 & pids+=($!); done
    rc=0; for p in "${pids[@]}"; do wait "$p" || rc=$?; done
    for g in "$@"; do cat "${TMPDIR:-/tmp}/race-$g.txt"; done; exit $rc' _ "$sanitizer" "$ctest_bin" "$seed" \
    linear norm mhc topk compressor attention moe synthetic hash packed
  run "memcheck backend tiny --quick" sanitizer.txt 100 "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 30 \
    "$ctest_bin" backend models/tiny --quick
  # the packed FP8/FP4 kernels on a checkpoint (codes and scales read in place)
  run "memcheck backend tiny-fp4 --quick" sanitizer.txt 100 "$sanitizer" --tool memcheck --error-exitcode 9 --print-limit 30 \
    "$ctest_bin" backend models/tiny-fp4 --quick
  # racecheck serialises every shared-memory access: the --quick workload ran past 300 s under it
  # (2026-11-30); --race runs the fewest launches that reach every kernel path
  run "racecheck backend tiny --race" sanitizer.txt 240 bash tools/racecheck.sh "$sanitizer" \
    "$ctest_bin" backend models/tiny --race
else
  note "compute-sanitizer" SKIP "not installed"
fi

# ---- summary -------------------------------------------------------------------------------
{
  echo "memra gpu-check: ${version}"
  echo "machine: ${gpus}x $(nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader 2>/dev/null | head -1), runtime ${runtime}, $(nproc) cores"
  echo "binaries: $bin; total $(elapsed)s"
  echo
  printf '%-34s %-8s %s\n' "step" "result" "detail"
  printf '%s\n' "${summary[@]}"
} > "$OUT/summary.txt"
for f in "$OUT"/*.txt; do  # keep every file under the 16 MB return limit
  (( $(stat -c %s "$f") > 15000000 )) && { tail -c 15000000 "$f" > "$f.tmp" && mv "$f.tmp" "$f"; }
done
grep -h -E '^(ok|FAIL) ' "$OUT/ops.txt" "$OUT/backend.txt" 2>/dev/null | grep '^FAIL' | head -20
grep -h -E '^\[' "$OUT/gates.txt" 2>/dev/null | cut -c1-160
grep -A12 '^path' "$OUT/bandwidth.txt" 2>/dev/null
echo
cat "$OUT/summary.txt"
grep -q -E ' (FAIL|TIMEOUT) ' "$OUT/summary.txt" && exit 1
exit 0
