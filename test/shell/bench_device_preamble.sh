#!/usr/bin/env bash
# shell.bench_device_preamble: bench/device_preamble.sh's whole_check (a device run's whole check in
# one line) runs tools/gpu-check.sh fresh with the budget left of the call's LIMIT (less 15 s for the
# archive), archives what it wrote as $OUT/check.tar.gz and prints its summary's last lines; ops_bits
# runs one ops group with the pack's library or an arm's, into its own file, one line printed;
# v4_bench runs bench/gpu_bench.sh with the pack's binaries, archives its folder as
# $OUT/bench.tar.gz and prints its rc and the table's first lines; marks_bench runs memra bench
# --graph-marks and keeps its JSON and graph_marks.py's tables; ab_linear and ncu_kernels pass
# their arms / kernels and arguments on and keep what comes back, as racecheck_backend does. On
# stubs of gpu-check.sh, gpu_bench.sh, memra_cuda_test, memra, graph_marks.py, ab_arms.sh,
# ab_medians.py, ncu, nvidia-smi, compute-sanitizer and racecheck.sh that record what they were
# given (the real ones need the GPU machine).
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/lib/prelude.sh"
root="$work/root"
mkdir -p "$root/bench" "$root/tools" "$work/out"
cp "$src/bench/device_preamble.sh" "$root/bench/"
cat > "$root/tools/gpu-check.sh" <<'STUB'
[[ "${1:-}" == --unpack ]] && exit 0
{ echo "step one PASS"; echo "step two PASS"; echo "budget ${GPU_CHECK_BUDGET_S:-unset} fresh ${GPU_CHECK_FRESH:-unset}"; } > "$OUT/summary.txt"
echo "console line"
STUB
mkdir -p "$root/build-gpu-pack/bin"
cat > "$root/build-gpu-pack/bin/memra_cuda_test" <<'STUB'
#!/usr/bin/env bash
echo "args $*"; echo "lib ${LD_LIBRARY_PATH%%:*}"; echo "== 3 checks, 0 failed =="
STUB
chmod +x "$root/build-gpu-pack/bin/memra_cuda_test"
ops=$(cd "$root" && OUT="$work/out" bash -c 'source bench/device_preamble.sh; ops_bits moe; ops_bits linear up2' 2>&1)
grep -q '^ops moe rc=0 == 3 checks, 0 failed ==$' <<< "$ops" || { echo "FAIL: ops_bits moe's line: $ops"; fail=1; }
grep -q '^ops linear (up2) rc=0 ' <<< "$ops" || { echo "FAIL: ops_bits linear up2's line: $ops"; fail=1; }
grep -q '^args ops --only moe$' "$work/out/ops-moe.txt" 2>/dev/null || { echo "FAIL: ops-moe.txt: not ops --only moe"; fail=1; }
grep -q "^lib $root/build-gpu-pack/bin$" "$work/out/ops-moe.txt" || { echo "FAIL: ops_bits moe: not the pack's library first"; fail=1; }
grep -q '^lib /tmp/up2/bin$' "$work/out/ops-linear-up2.txt" 2>/dev/null || { echo "FAIL: ops_bits linear up2: not the arm's library first"; fail=1; }
out=$(cd "$root" && OUT="$work/out" LIMIT=100 bash -c 'source bench/device_preamble.sh; whole_check 2' 2>&1)
grep -q '^budget 8[0-5] fresh 1$' <<< "$out" || { echo "FAIL: not the budget left of LIMIT 100 less 15, fresh: $out"; fail=1; }
grep -q '^step one' <<< "$out" && { echo "FAIL: printed more than the summary's last 2 lines: $out"; fail=1; }
grep -q '^t=[0-9]*s$' <<< "$out" || { echo "FAIL: no elapsed line: $out"; fail=1; }
listing=$(tar tzf "$work/out/check.tar.gz" 2>&1)
for f in summary.txt console.txt; do
  grep -q "$f" <<< "$listing" || { echo "FAIL: check.tar.gz lacks $f: $listing"; fail=1; }
done
tar xzf "$work/out/check.tar.gz" -O ./console.txt | grep -q 'console line' || { echo "FAIL: the console was not kept"; fail=1; }
cat > "$root/bench/gpu_bench.sh" <<'STUB'
{ echo "| measure | memra |"; echo "| decode | 0.28 |"; echo "| batch 64 | 6800 |"; } > "$OUT/table.md"
echo "bin $BIN args $BENCH_ARGS" > "$OUT/given.txt"
exit 3
STUB
vb=$(cd "$root" && OUT="$work/out" bash -c 'source bench/device_preamble.sh; v4_bench 2' 2>&1)
grep -q '^v4 bench rc=3$' <<< "$vb" || { echo "FAIL: v4_bench's rc line: $vb"; fail=1; }
grep -q '^| decode | 0.28 |$' <<< "$vb" || { echo "FAIL: v4_bench did not print the table: $vb"; fail=1; }
grep -q '^| batch 64' <<< "$vb" && { echo "FAIL: v4_bench printed more than 2 table lines: $vb"; fail=1; }
given=$(tar xzf "$work/out/bench.tar.gz" -O ./given.txt 2>&1)
grep -q "^bin $root/build-gpu-pack/bin args --timeline$" <<< "$given" || { echo "FAIL: v4_bench: not the pack's binaries with --timeline: $given"; fail=1; }
# ab_linear: the arms to bench/ab_arms.sh with the pack's memra and the default bench arguments (or
# AB_ARGS), its console and folder kept, the arms' names (first first) to ab_medians.py, its table
# as medians.txt
cat > "$root/bench/ab_arms.sh" <<'STUB'
mkdir -p "$8" && echo "memra $7 args $9 arms ${*:10}" > "$8/given.txt" && echo "ab console ${*:1:6}"
STUB
cat > "$root/bench/ab_medians.py" <<'STUB'
import sys; print("medians " + " ".join(sys.argv[1:]))
STUB
ab=$(cd "$root" && OUT="$work/out" bash -c 'source bench/device_preamble.sh; ab_linear 3 base= r="A=1 B=2" g3=C=3' 2>&1)
grep -q '^medians --sites linear_exact --per-site linear_exact --phases /.*/ab base,r,g3$' <<< "$ab" ||
  { echo "FAIL: ab_linear's medians call: $ab"; fail=1; }
grep -q '^medians ' "$work/out/medians.txt" 2>/dev/null || { echo "FAIL: medians.txt not the table"; fail=1; }
grep -q '^ab console --passes 3 --timeout 60 --sites linear_exact$' "$work/out/ab.txt" 2>/dev/null ||
  { echo "FAIL: ab.txt: $(cat "$work/out/ab.txt" 2>&1)"; fail=1; }
given=$(tar xzf "$work/out/ab.tar.gz" -O ab/given.txt 2>&1)
grep -q "^memra $root/build-gpu-pack/bin/memra args bench --json --timeline --contexts 2048 .* arms base= r=A=1 B=2 g3=C=3$" <<< "$given" ||
  { echo "FAIL: ab_linear's ab_arms call: $given"; fail=1; }
ab=$(cd "$root" && OUT="$work/out" AB_ARGS="bench --json" bash -c 'source bench/device_preamble.sh; ab_linear 1 base=' 2>&1)
grep -q "args bench --json arms base=$" <<< "$(tar xzf "$work/out/ab.tar.gz" -O ab/given.txt 2>&1)" ||
  { echo "FAIL: AB_ARGS not passed"; fail=1; }
# marks_bench: the pack's memra given the default arguments (or ARGS) with --json --graph-marks, its
# JSON kept as marks.json.xz, graph_marks.py's tables as marks.txt, their first lines printed
cat > "$root/build-gpu-pack/bin/memra" <<'STUB'
#!/usr/bin/env bash
echo "{\"args\": \"$*\"}"; echo "memra note" >&2
STUB
chmod +x "$root/build-gpu-pack/bin/memra"
cat > "$root/bench/graph_marks.py" <<'STUB'
import sys; print("decode 2048: step " + open(sys.argv[1]).read().strip()); print("  main chain"); print("verify 6: " + " ".join(sys.argv[2:]))
STUB
mb=$(cd "$root" && OUT="$work/out" bash -c 'source bench/device_preamble.sh; marks_bench' 2>&1)
grep -q '^marks rc=0$' <<< "$mb" || { echo "FAIL: marks_bench's rc line: $mb"; fail=1; }
grep -q '^decode 2048: step {"args": "bench --json --contexts 2048 --batches 8 --verify 6,16 .*--reps 3 --graph-marks"}$' <<< "$mb" ||
  { echo "FAIL: marks_bench's memra call or table line: $mb"; fail=1; }
grep -q '^verify 6: --lines decode,verify,batch --top 40$' <<< "$mb" || { echo "FAIL: marks_bench's graph_marks.py call: $mb"; fail=1; }
grep -q 'main chain' <<< "$mb" && { echo "FAIL: marks_bench printed more than the tables' first lines: $mb"; fail=1; }
grep -q 'main chain' "$work/out/marks.txt" 2>/dev/null || { echo "FAIL: marks.txt not the whole tables"; fail=1; }
grep -q '^memra note$' "$work/out/marks.err" 2>/dev/null || { echo "FAIL: marks.err not memra's stderr"; fail=1; }
xz -dc "$work/out/marks.json.xz" 2>/dev/null | grep -q 'graph-marks' || { echo "FAIL: marks.json.xz not the bench's JSON"; fail=1; }
mb=$(cd "$root" && OUT="$work/out" bash -c 'source bench/device_preamble.sh; marks_bench --contexts 32768' 2>&1)
grep -q '"args": "bench --json --contexts 32768 --graph-marks"' <<< "$mb" || { echo "FAIL: marks_bench ARGS not passed: $mb"; fail=1; }
lf=$(cd "$root" && OUT="$work/out" LIMIT=300 bash -c 'source bench/device_preamble.sh; left' 2>&1 | tail -1)
[[ "$lf" =~ ^(29[5-9]|300)$ ]] || { echo "FAIL: left under LIMIT 300: $lf"; fail=1; }
# ncu_kernels: ncu (found on PATH) given the kernels' regex, skip and count and the pack's memra with
# the arguments; the report read back as the two .xz files; the kernels' lines printed, names cut
# before their parameters
mkdir -p "$work/path"
cat > "$work/path/ncu" <<'STUB'
#!/usr/bin/env bash
if [[ "$1" == -i ]]; then
  echo "$*" >> "$NCU_READ"
  if [[ -n "${NCU_NO_INSTANCES:-}" && " $* " == *" --print-metric-instances "* ]]; then
    echo "==ERROR== unrecognised option '--print-metric-instances'"; exit 1
  fi
  if [[ " $* " == *" --page details "* ]]; then
    printf '  void k<2, 8>(LinearArgs) (8, 1, 1)x(256, 1, 1), Context 1, Stream 7, Device 0\n    Duration  us  12.5\n    Other  x  1\n'
  else echo "raw,metrics"; fi
  exit 0
fi
echo "$*" > "$NCU_GIVEN"
STUB
chmod +x "$work/path/ncu"
export NCU_READ="$work/ncu-read.txt"
nk=$(cd "$root" && OUT="$work/out" NCU_GIVEN="$work/ncu-given.txt" PATH="$work/path:$PATH" \
  bash -c 'source bench/device_preamble.sh; ncu_kernels r16 "rows_kernel|gemm" 8 14 bench --verify 16' 2>&1)
grep -q -- "-k regex:rows_kernel|gemm --launch-skip 8 --launch-count 14 .* -o /.*/r16 $root/build-gpu-pack/bin/memra bench --verify 16$" \
  "$work/ncu-given.txt" 2>/dev/null || { echo "FAIL: ncu_kernels' ncu call: $(cat "$work/ncu-given.txt" 2>&1)"; fail=1; }
grep -q -- '--clock-control none' "$work/ncu-given.txt" 2>/dev/null || { echo "FAIL: ncu_kernels: clocks not left alone"; fail=1; }
[[ "$(xz -dc "$work/out/r16-raw.csv.xz" 2>&1)" == raw,metrics ]] || { echo "FAIL: r16-raw.csv.xz"; fail=1; }
xz -dc "$work/out/r16-details.txt.xz" 2>/dev/null | grep -q '^    Other' || { echo "FAIL: r16-details.txt.xz not whole"; fail=1; }
grep -q '^ncu r16 rc=0' <<< "$nk" || { echo "FAIL: ncu_kernels' rc line: $nk"; fail=1; }
grep -q '^  void k<2, 8> Stream 7, Device 0$' <<< "$nk" || { echo "FAIL: ncu_kernels' kernel line: $nk"; fail=1; }
grep -q 'Duration' <<< "$nk" && grep -q 'Other' <<< "$nk" && { echo "FAIL: ncu_kernels printed every line: $nk"; fail=1; }
# The raw page asked with its metric instances named; an ncu that refuses --print-metric-instances
# still gives the plain page.
grep -q -- '--page raw --csv --print-metric-instances details' "$work/ncu-read.txt" ||
  { echo "FAIL: ncu_kernels: raw page without instances: $(cat "$work/ncu-read.txt")"; fail=1; }
(cd "$root" && OUT="$work/out" NCU_GIVEN="$work/ncu-given.txt" NCU_NO_INSTANCES=1 PATH="$work/path:$PATH" \
  bash -c 'source bench/device_preamble.sh; ncu_kernels r16old "rows_kernel" 0 1 bench' > /dev/null 2>&1)
[[ "$(xz -dc "$work/out/r16old-raw.csv.xz" 2>&1)" == raw,metrics ]] ||
  { echo "FAIL: no plain raw page where ncu lacks --print-metric-instances"; fail=1; }
# racecheck_backend: tools/racecheck.sh given the sanitizer found on PATH, the pack's memra_cuda_test
# and `backend MODEL --race`, its output kept as racecheck-backend-NAME.txt, one line printed; gpu
# holds nvidia-smi's name.
cat > "$work/path/compute-sanitizer" <<'STUB'
#!/usr/bin/env bash
STUB
cat > "$work/path/nvidia-smi" <<'STUB'
#!/usr/bin/env bash
echo "NVIDIA H200"
STUB
chmod +x "$work/path/compute-sanitizer" "$work/path/nvidia-smi"
cat > "$root/tools/racecheck.sh" <<'STUB'
echo "racecheck args $*"; echo "== backend: 15 checks, 0 failed =="; echo "========= RACECHECK SUMMARY: 0 hazards displayed"
STUB
rc_out=$(cd "$root" && OUT="$work/out" PATH="$work/path:$PATH" \
  bash -c 'source bench/device_preamble.sh; [[ $gpu == *H200* ]] && echo "gpu is an H200"; racecheck_backend models/tiny 30' 2>&1)
grep -q '^gpu is an H200$' <<< "$rc_out" || { echo "FAIL: gpu not nvidia-smi's name: $rc_out"; fail=1; }
grep -q "^racecheck args $work/path/compute-sanitizer $root/build-gpu-pack/bin/memra_cuda_test backend models/tiny --race$" \
  "$work/out/racecheck-backend-tiny.txt" 2>/dev/null || { echo "FAIL: racecheck_backend's call: $(cat "$work/out/racecheck-backend-tiny.txt" 2>&1)"; fail=1; }
grep -q '^racecheck backend models/tiny --race rc=0 == backend: 15 checks, 0 failed == =* RACECHECK SUMMARY: 0 hazards displayed $' <<< "$rc_out" ||
  { echo "FAIL: racecheck_backend's line: $rc_out"; fail=1; }
[[ $fail == 0 ]] && echo "ok: whole_check: budget, archive, summary tail; ops_bits: files, arms, lines; v4_bench: binaries, archive, table; ab_linear: arms, arguments, archive, medians; marks_bench: call, files, lines; left; ncu_kernels: call, files, lines, raw page fallback; racecheck_backend: call, file, line; gpu"

exit $fail
