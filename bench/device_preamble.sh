# bench/device_preamble.sh: the start every device run's command (bench/results/*/command.sh) shares,
# sourced from the repository root after `set -uo pipefail`: unpack the carried binaries
# (tools/gpu-check.sh --unpack) and name them.
#   P   the carried pack (build-gpu-pack)      t   its memra_cuda_test
#   m   its memra                              el  prints the seconds since the preamble ran
#   lib_arm NAME  unpacks a second library carried as $P/NAME (below)
#   whole_check   the whole gpu-check within the call's LIMIT, as $OUT/check.tar.gz (below)
#   ops_bits GROUP [ARM], memcheck_ops GROUP   one ops group by bits / under memcheck, one line each
#   v4_bench [LINES]  issue 13's v4 bench (bench/gpu_bench.sh) as $OUT/bench.tar.gz, its table printed
#   ab_linear PASSES ARM=SETTINGS …   an A/B of `memra bench` arms with the linears' sites (below)
#   marks_bench [ARGS …]   `memra bench --graph-marks` and graph_marks.py's tables (below)
#   left          seconds left of the call's LIMIT (default 560)
#   ncu_kernels TAG REGEX SKIP COUNT ARGS …   ncu of some launches of the kernels REGEX names (below)
#   racecheck_backend MODEL [SECONDS]   racecheck of `memra_cuda_test backend MODEL --race` (below)
#   gpu           the GPU's name (empty without nvidia-smi): `[[ $gpu == *H200* ]]`
#   sanitizer     compute-sanitizer's path, empty where there is none
# It prints memra's version and the GPU's name first (each run's record of what ran where).
# NCCL's NVLink multicast stays off (the lent machines' rule), and the pack's libraries come first.
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack
t=$P/bin/memra_cuda_test
m=$P/bin/memra
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s)
el() { echo "t=$(($(date +%s) - T0))s"; }
left() { echo $(( ${LIMIT:-560} - ($(date +%s) - T0) )); }
[[ -x "$m" ]] && "$m" --version | head -1
gpu=$(command -v nvidia-smi > /dev/null && nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
[[ -n "$gpu" ]] && echo "$gpu"
# ops_bits GROUP [ARM]: `memra_cuda_test ops --only GROUP` (the exact kernels against their CPU twins
# by bits) with the pack's library, or with lib_arm ARM's; its output as $OUT/ops-GROUP[-ARM].txt,
# one line printed: its rc and verdict.
ops_bits() {
  local f=$OUT/ops-$1${2:+-$2}.txt
  LD_LIBRARY_PATH=${2:+/tmp/$2/bin}${2:+:}$LD_LIBRARY_PATH timeout 60 "$t" ops --only "$1" > "$f" 2>&1
  echo "ops $1${2:+ ($2)} rc=$? $(tail -1 "$f")"
}
# sanitizer: compute-sanitizer's path (on PATH or in /usr/local/cuda/bin), empty where there is none.
sanitizer() { command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null; }
# memcheck_ops GROUP: the quick ops GROUP under compute-sanitizer's memcheck, as $OUT/memcheck-GROUP.txt,
# one line printed (or why it did not run).
memcheck_ops() {
  local san f=$OUT/memcheck-$1.txt
  san=$(sanitizer)
  [[ -n "$san" ]] || { echo "memcheck ops $1: no compute-sanitizer here"; return 0; }
  timeout 90 "$san" --tool memcheck --error-exitcode 9 --print-limit 20 "$t" ops --quick --only "$1" > "$f" 2>&1
  echo "memcheck ops $1 rc=$? $(grep -E 'ERROR SUMMARY' "$f" | tail -1)"
}
# lib_arm NAME: the carried library $P/NAME/libmemra_cuda.so.xz beside the pack's memra and other
# libraries in /tmp/NAME/bin (an ab_arms.sh arm: bin=/tmp/NAME/bin; a test: LD_LIBRARY_PATH=/tmp/NAME/bin).
lib_arm() {
  mkdir -p "/tmp/$1/bin" && cp "$m" "/tmp/$1/bin/" &&
    python3 -c "import lzma,sys; open(sys.argv[2],'wb').write(lzma.open(sys.argv[1]).read())" \
      "$P/$1/libmemra_cuda.so.xz" "/tmp/$1/bin/libmemra_cuda.so" &&
    for f in "$P"/bin/*.so.*; do ln -sf "$f" "/tmp/$1/bin/"; done
}
# whole_check [LINES]: the whole tools/gpu-check.sh (GPU_CHECK_FRESH=1) in what is left of the
# call's LIMIT (default 560 s; 15 s kept for the archive), its files as $OUT/check.tar.gz, the last
# LINES (default 60) of its summary printed: a run's whole check is this one line.
whole_check() {
  local dir budget=$(( $(left) - 15 ))
  dir=$(mktemp -d)
  OUT=$dir GPU_CHECK_FRESH=1 GPU_CHECK_BUDGET_S=$budget bash tools/gpu-check.sh > "$dir/console.txt" 2>&1
  tar czf "$OUT/check.tar.gz" -C "$dir" .
  tail -n "${1:-60}" "$dir/summary.txt" 2>/dev/null
  el
}
# v4_bench [LINES]: bench/gpu_bench.sh with the pack's binaries (memra bench --timeline beside
# transformers on the same weights, the marginal layer, tau, the table and the plot) in a folder of
# its own, archived as $OUT/bench.tar.gz; one line with its rc, then the first LINES (default 40)
# of its table.
v4_bench() {
  local dir
  dir=$(mktemp -d)
  OUT=$dir BIN=$P/bin BENCH_TIMEOUT=90 TF_TIMEOUT=150 MARGINAL_TIMEOUT=45 BENCH_ARGS=--timeline \
    timeout 240 bash bench/gpu_bench.sh > "$dir/console.txt" 2>&1
  echo "v4 bench rc=$?"
  tar czf "$OUT/bench.tar.gz" -C "$dir" .
  head -n "${1:-40}" "$dir/table.md" 2>/dev/null
  el
}
# ab_linear PASSES ARM=SETTINGS …: bench/ab_arms.sh's arms (the first is the one the others are
# read against) over `memra bench --json --timeline` at 2 layers (decode at 2k, batches 8 / 32 / 64,
# verify 6 / 16; AB_ARGS replaces those arguments), PASSES passes interleaved, as $OUT/ab.txt and
# $OUT/ab.tar.gz; then bench/ab_medians.py's per-arm medians with every linear site (AB_SITES: every
# site that regex matches) per round and the phases of each decode / verify step (where its wall
# time goes), as $OUT/medians.txt and printed (a run's step after it reads its arms' lines:
# `$1 == "ARM"`).
ab_linear() {
  local passes=$1 names=() spec dir
  shift
  dir=$(mktemp -d)
  for spec in "$@"; do names+=("${spec%%=*}"); done
  local args="bench --json --timeline --contexts 2048 --batches 8,32,64 --verify 6,16 --steps 4 --snapshot-gib 0.05 --prefill 64 --reps 5"
  bash bench/ab_arms.sh --passes "$passes" --timeout 60 --sites linear_exact "$m" "$dir/ab" "${AB_ARGS:-$args}" "$@" \
    > "$OUT/ab.txt" 2>&1
  tar czf "$OUT/ab.tar.gz" -C "$dir" ab
  local IFS=,
  python3 bench/ab_medians.py --sites linear_exact --per-site "${AB_SITES:-linear_exact}" --phases "$dir/ab" "${names[*]}" |
    tee "$OUT/medians.txt"
  el
}
# marks_bench [ARGS …]: `memra bench --json --graph-marks` at 2 layers (decode at 2k, batch 8, verify
# 6 / 16, three reps; ARGS replace those) within 90 s, as $OUT/marks.json.xz and $OUT/marks.err;
# bench/graph_marks.py's tables of its decode, verify and batch lines as $OUT/marks.txt. Printed: the
# bench's rc and each table's first line.
marks_bench() {
  local dir
  dir=$(mktemp -d)
  local args=(--contexts 2048 --batches 8 --verify 6,16 --snapshot-gib 0.05 --prefill 64 --reps 3)
  [[ $# -gt 0 ]] && args=("$@")
  timeout 90 "$m" bench --json "${args[@]}" --graph-marks > "$dir/marks.json" 2> "$OUT/marks.err"
  echo "marks rc=$?"
  python3 bench/graph_marks.py "$dir/marks.json" --lines decode,verify,batch --top 40 > "$OUT/marks.txt" 2>&1
  xz -9 < "$dir/marks.json" > "$OUT/marks.json.xz"
  grep -E "^(decode|verify|batch)" "$OUT/marks.txt" | head -8
  el
}
# ncu_kernels TAG REGEX SKIP COUNT ARGS …: ncu (--clock-control none) of launches SKIP + 1 … SKIP +
# COUNT of the kernels matching REGEX while the pack's memra runs ARGS (its stdout dropped), with the
# sections a kernel's reading needs (speed of light, launch, occupancy, warp states, compute, memory,
# instructions), within NCU_TIMEOUT (150) s; as $OUT/TAG-details.txt.xz (every body item) and
# $OUT/TAG-raw.csv.xz (every collected metric, instances named); printed: its rc, then per kernel
# its name, grid, duration, issue slots and L2 / DRAM throughput (NCU_LINES, 90, lines).
ncu_kernels() {
  local tag=$1 regex=$2 skip=$3 count=$4 ncu dir
  shift 4
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null)
  [[ -n "$ncu" ]] || { echo "ncu $tag: no ncu here"; return 0; }
  dir=$(mktemp -d)
  timeout "${NCU_TIMEOUT:-150}" "$ncu" --clock-control none --kernel-name-base demangled -k "regex:$regex" \
    --launch-skip "$skip" --launch-count "$count" --section SpeedOfLight --section LaunchStats --section Occupancy \
    --section WarpStateStats --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section InstructionStats -o "$dir/$tag" "$m" "$@" > /dev/null 2> "$dir/err.txt"
  echo "ncu $tag rc=$? $(tail -1 "$dir/err.txt")"
  "$ncu" -i "$dir/$tag.ncu-rep" --page details --print-details all > "$dir/details.txt" 2>&1
  # Metrics with instances (the executed instructions per SASS opcode) written out with their names;
  # an ncu without --print-metric-instances gives the plain page.
  "$ncu" -i "$dir/$tag.ncu-rep" --page raw --csv --print-metric-instances details > "$dir/raw.csv" 2>&1 ||
    "$ncu" -i "$dir/$tag.ncu-rep" --page raw --csv > "$dir/raw.csv" 2>&1
  xz -9 < "$dir/details.txt" > "$OUT/$tag-details.txt.xz"
  xz -9 < "$dir/raw.csv" > "$OUT/$tag-raw.csv.xz"
  grep -E "^  [^ ]|Grid Size|^ +Duration|Issue Slots Busy|L2 Cache Throughput|DRAM Throughput" "$dir/details.txt" |
    sed -E 's/\(.*Stream/ Stream/' | head -n "${NCU_LINES:-90}"
  el
}
# racecheck_backend MODEL [SECONDS]: tools/racecheck.sh's racecheck of `memra_cuda_test backend MODEL
# --race` (the whole check's slowest step, ~170 s for models/tiny) within SECONDS (200), as
# $OUT/racecheck-backend-NAME.txt (NAME: MODEL's last part), one line printed: its rc, summary and
# checks line (or why it did not run).
racecheck_backend() {
  local san f=$OUT/racecheck-backend-${1##*/}.txt
  san=$(sanitizer)
  [[ -n "$san" ]] || { echo "racecheck backend $1: no compute-sanitizer here"; return 0; }
  timeout "${2:-200}" bash tools/racecheck.sh "$san" "$t" backend "$1" --race > "$f" 2>&1
  echo "racecheck backend $1 --race rc=$? $(grep -E 'RACECHECK SUMMARY|checks,' "$f" | tail -2 | tr '\n' ' ')"
  el
}
