#!/usr/bin/env bash
# shell.racecheck_filter: tools/racecheck.sh, which tools/gpu-check.sh's racecheck steps run through,
# on a stand-in sanitizer (no GPU): a hazard in a memra kernel fails (9), hazards only inside
# cuBLAS's nvjet kernels pass with a note, an internal sanitizer error fails, the command's own
# failure is returned as it is, a clean run passes.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "$0")/../.." && pwd)}"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# The stand-in: prints $dir/report, then runs the command after the sanitizer's own options.
cat > "$dir/sanitizer" <<STUB
#!/usr/bin/env bash
while [[ "\$1" == --* ]]; do [[ "\$1" == --tool || "\$1" == --print-limit ]] && shift; shift; done
cat "$dir/report"
"\$@"
STUB
chmod +x "$dir/sanitizer"
fail=0
check() {  # check WHAT WANT_RC REPORT COMMAND…
  local what=$1 want=$2
  printf '%s\n' "$3" > "$dir/report"
  shift 3
  out=$(bash "$src/tools/racecheck.sh" "$dir/sanitizer" "$@" 2>&1)
  local rc=$?
  if [[ $rc -eq $want ]]; then echo "ok: $what (rc $rc)"; else echo "FAIL: $what: rc $rc, want $want"; echo "$out"; fail=1; fi
}
nvjet='========= Error: Race reported between Read access at nvjet_sm90_tss_64x8_64x16_1x4_h_bz_TNT+0xaf0
=========     and Write access at nvjet_sm90_tss_64x8_64x16_1x4_h_bz_TNT+0x2800 [96 hazards]
========= RACECHECK SUMMARY: 2 hazards displayed (2 errors, 0 warnings)'
ours='========= Error: Race reported between Write access at memra::cuda::(anonymous namespace)::indexer_fast_kernel<4>(memra::cuda::IndexerArgs, int)+0x1f0
=========     and Read access at memra::cuda::(anonymous namespace)::indexer_fast_kernel<4>(memra::cuda::IndexerArgs, int)+0x2a0 [4 hazards]
========= RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)'
check "clean run" 0 "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" true
check "hazards only inside cuBLAS's nvjet kernels" 0 "$nvjet" true
check "a hazard in a memra kernel" 9 "$ours" true
check "a memra hazard beside cuBLAS's" 9 "$nvjet
$ours" true
check "hazards counted but not attributed" 9 "========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)" true
check "an internal sanitizer error" 9 "========= Internal Sanitizer Error: The Sanitizer failed to handle a hardware exception." true
check "the command's own failure" 3 "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)" bash -c 'exit 3'
out=$(printf '%s\n' "$nvjet" > "$dir/report"; bash "$src/tools/racecheck.sh" "$dir/sanitizer" true 2>&1)
grep -q "hazards only inside cuBLAS's kernels (not memra's): nvjet_sm90_tss_64x8_64x16_1x4_h_bz_TNT" <<<"$out" ||
  { echo "FAIL: the cuBLAS note is missing: $out"; fail=1; }
bash "$src/tools/racecheck.sh" 2> "$dir/err"; rc=$?
[[ $rc -eq 2 ]] && grep -q "^racecheck.sh: error: usage" "$dir/err" || { echo "FAIL: no usage error (rc $rc)"; fail=1; }
exit $fail
