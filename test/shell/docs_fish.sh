#!/usr/bin/env bash
# shell.docs_fish: the fish completion (generated now, and the committed completions/memra.fish)
# parses, and fish's own completer, given it, completes `memra lo` to load and `memra devices --j`
# to --json. Skips (77) when fish is not installed; freshness is shell.docs_fresh's job.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail

src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
if ! command -v fish >/dev/null; then
  echo "SKIP: fish is not installed (apt-get install fish to run this test)"
  exit 77
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/docs_fish.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$bin" generate fish --out "$work/memra.fish" || { echo "FAIL: $bin generate fish failed"; exit 1; }
for f in "$src/completions/memra.fish" "$work/memra.fish"; do
  [[ -f "$f" ]] || { fail "missing $f"; continue; }
  fish --no-execute "$f" || fail "fish --no-execute $f: syntax error"
done

expect() {  # expect WANTED LINE: fish completes LINE with WANTED among its candidates
  local got
  got=$(HOME="$work" XDG_CONFIG_HOME="$work" fish --no-config -c 'source $argv[1]; complete -C $argv[2]' \
    "$work/memra.fish" "$2" 2>&1 | cut -f1)
  if grep -qxF -- "$1" <<< "$got"; then
    echo "ok: '$2' completes to $1"
  else
    fail "fish completion of '$2' gave [$(tr '\n' ' ' <<< "$got")], expected $1"
  fi
}
expect load "memra lo"
expect load "memra -q lo"
expect --json "memra devices --j"
expect --quiet "memra --qu"
(( fails )) && exit 1
echo "fish completion ok"
