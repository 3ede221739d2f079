#!/usr/bin/env bash
# bench/ab_arms.sh: `memra bench --json` under A/B arms in one call, passes interleaved (each pass
# runs every arm once, so drift between passes hits every arm alike), then bench/ab_summary.py.
#
#   bench/ab_arms.sh [--passes N] [--timeout S] [--sites REGEX] MEMRA OUTDIR 'BENCH ARGS' ARM=SETTINGS …
#
# SETTINGS: whitespace-separated VAR=value words set for that arm's runs (none: the defaults); the
# word bin=DIR runs DIR/memra with DIR first on LD_LIBRARY_PATH (another build carried beside,
# unpacked with tools/gpu-check.sh --unpack DIR/..). Writes OUTDIR/ARMpass.json and .err, prints
# one status line per run and the summary. Exit 2 with a one-line error on bad arguments.
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
passes=2 timeout_s=80 sites=()
die() { echo "ab_arms.sh: error: $1" >&2; exit 2; }
while [[ $# -gt 0 && "$1" == --* ]]; do
  case "$1" in
    --passes) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--passes takes a positive count"; passes=$2; shift 2 ;;
    --timeout) [[ "${2:-}" =~ ^[1-9][0-9]*$ ]] || die "--timeout takes seconds"; timeout_s=$2; shift 2 ;;
    --sites) [[ -n "${2:-}" ]] || die "--sites takes a regex"; sites=(--sites "$2"); shift 2 ;;
    *) die "unknown option $1 (hint: --passes N, --timeout S, --sites REGEX)" ;;
  esac
done
[[ $# -ge 4 ]] || die "usage: ab_arms.sh [--passes N] [--timeout S] [--sites REGEX] MEMRA OUTDIR 'BENCH ARGS' ARM=SETTINGS …"
memra=$1 out=$2 args=$3
shift 3
[[ -x "$memra" ]] || die "$memra is not an executable memra"
names=() settings=()
for spec in "$@"; do
  [[ "$spec" =~ ^([A-Za-z][A-Za-z0-9_]*)=(.*)$ ]] || die "'$spec' is not ARM=SETTINGS (hint: new='' or off='MEMRA_CUDA_PDL=0')"
  name=${BASH_REMATCH[1]} setting=${BASH_REMATCH[2]}
  for w in $setting; do
    [[ "$w" =~ ^[A-Za-z_][A-Za-z0-9_]*=.*$ ]] || die "arm $name: '$w' is not VAR=value"
  done
  names+=("$name") settings+=("$setting")
done
mkdir -p "$out" || die "cannot make $out"
summary=()
for ((p = 1; p <= passes; ++p)); do
  for i in "${!names[@]}"; do
    name=${names[$i]} bin=$memra env_words=()
    for w in ${settings[$i]}; do
      if [[ "$w" == bin=* ]]; then bin=${w#bin=}/memra; env_words+=("LD_LIBRARY_PATH=${w#bin=}:${LD_LIBRARY_PATH:-}")
      else env_words+=("$w"); fi
    done
    # shellcheck disable=SC2086  # the bench arguments are words
    env "${env_words[@]}" timeout "$timeout_s" "$bin" $args > "$out/$name$p.json" 2> "$out/$name$p.err"
    echo "arm $name pass $p rc=$? $(tail -c 100 "$out/$name$p.err" | tr '\n' ' ')"
    summary+=("${name}_$p=$out/$name$p.json")
  done
done
python3 "$here/ab_summary.py" "${sites[@]}" "${summary[@]}"
