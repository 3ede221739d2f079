#!/usr/bin/env bash
# tools/racecheck.sh: compute-sanitizer racecheck on a command, failing only on memra's own kernels.
#
#   tools/racecheck.sh SANITIZER COMMAND [ARGS …]
#
# Runs `SANITIZER --tool racecheck --print-limit 30 COMMAND ARGS` and prints its output. Exit: the
# command's own status when it failed; 9 when racecheck reported a hazard in any kernel other than
# cuBLAS's Hopper GEMM kernels (nvjet_*), or could not check (an internal sanitizer error); else 0,
# with one line naming the cuBLAS kernels it reported, if any. Why: racecheck reports shared-memory
# hazards inside nvjet kernels (run 163, the attention group's GEMM on 16-bit outputs), which are the
# library's; leaving them out of the check (--kernel-name-exclude) crashed the sanitizer instead
# (run 164), so they run checked and their reports are told apart here.
set -uo pipefail
[[ $# -ge 2 ]] || { echo "racecheck.sh: error: usage: racecheck.sh SANITIZER COMMAND [ARGS …]" >&2; exit 2; }
sanitizer=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
"$sanitizer" --tool racecheck --print-limit 30 "$@" > "$log" 2>&1
rc=$?
cat "$log"
[[ $rc -ne 0 ]] && exit $rc
if grep -q "Internal Sanitizer Error" "$log"; then
  echo "racecheck.sh: FAIL: the sanitizer could not check the run (internal error above)"
  exit 9
fi
# "Race reported between Read access at KERNEL+0x… and Write access at KERNEL+0x…" (two lines).
kernels=$(grep -A1 "Race reported between" "$log" | grep -oE "access at [^ +]+" | awk '{print $3}' | sort -u)
ours=$(grep -v '^nvjet_' <<<"$kernels" | grep -v '^$')
if [[ -n "$ours" ]]; then
  echo "racecheck.sh: FAIL: hazards in $(tr '\n' ' ' <<<"$ours")"
  exit 9
fi
summary=$(grep -oE "RACECHECK SUMMARY: [0-9]+ hazard" "$log" | awk '{s += $3} END {print s + 0}')
if [[ "$summary" -gt 0 && -z "$kernels" ]]; then
  echo "racecheck.sh: FAIL: $summary hazards reported, none attributed to a kernel"
  exit 9
fi
[[ -n "$kernels" ]] && echo "racecheck.sh: hazards only inside cuBLAS's kernels (not memra's): $(tr '\n' ' ' <<<"$kernels")"
exit 0
