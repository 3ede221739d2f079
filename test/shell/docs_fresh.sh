#!/usr/bin/env bash
# shell.docs_fresh: the committed man pages and completions are what `memra generate all` writes
# for the CLI as built (git's t0450 idea), every visible subcommand has a man page and appears in
# all three completion files, the bash completion parses, and it really completes: `memra lo` to
# `load`, `memra load --j` to a load option.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC, MEMRA_BUILD.
set -uo pipefail

src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
work="$(mktemp -d "${TMPDIR:-/tmp}/docs_fresh.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. Freshness: regenerate into a scratch folder and compare with the committed files.
if ! "$bin" -q generate all --dir "$work/gen" > "$work/gen.out" 2>&1; then
  cat "$work/gen.out"
  fail "$bin generate all --dir $work/gen failed"
  exit 1
fi
for d in man completions; do
  if ! diff -ru "$src/$d" "$work/gen/$d" > "$work/$d.diff" 2>&1; then
    head -n 60 "$work/$d.diff"
    fail "$d/ is stale: it differs from what the CLI generates (diff above, committed vs generated)"
  fi
done
if (( fails )); then
  echo "hint: regenerate and commit: tools/regen-docs.sh ${MEMRA_BUILD:-build} && git add man completions"
fi

# 2. Coverage: the visible subcommands, as `memra --help` lists them.
subs=$("$bin" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^[^ ]/ { on = 0 }')
if [[ -z "$subs" ]]; then
  fail "no subcommands found in '$bin --help'"
fi
for s in $subs; do
  [[ -f "$work/gen/man/memra-$s.1" ]] || fail "no generated man page man/memra-$s.1"
  [[ -f "$src/man/memra-$s.1" ]] || fail "no committed man page man/memra-$s.1"
  grep -q "\"memra $s\")" "$work/gen/completions/memra.bash" || fail "subcommand $s missing from completions/memra.bash"
  grep -q "^        '$s:" "$work/gen/completions/_memra" || fail "subcommand $s missing from completions/_memra"
  grep -q "__memra_in memra' -a $s " "$work/gen/completions/memra.fish" || fail "subcommand $s missing from completions/memra.fish"
  grep -q "^\\\\fB$s\\\\fR\$" "$work/gen/man/memra.1" || fail "subcommand $s missing from the COMMANDS of man/memra.1"
done
[[ -f "$work/gen/man/memra.1" ]] || fail "no man page man/memra.1"
[[ -e "$work/gen/man/memra-generate.1" ]] && fail "the hidden subcommand generate got a man page"
for page in "$work"/gen/man/*.1; do
  for section in NAME SYNOPSIS DESCRIPTION "EXIT STATUS"; do
    grep -q "^\.SH $section\$" "$page" || fail "$(basename "$page") has no $section section"
  done
done

# 3. Bash syntax, of the committed and the generated file.
for f in "$src/completions/memra.bash" "$work/gen/completions/memra.bash"; do
  [[ -f "$f" ]] || { fail "missing $f"; continue; }
  bash -n "$f" || fail "bash -n $f: syntax error"
done

# 4. Bash completion at work: source the generated file and ask it, as bash's `complete -F` would.
complete_words() {  # prints COMPREPLY for the words given; the last word is the one being completed
  bash -c '
    source "$1"; shift
    COMP_WORDS=("$@"); COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))
    COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
    _memra memra "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
    printf "%s\n" "${COMPREPLY[@]}"' _ "$work/gen/completions/memra.bash" "$@"
}
expect_completion() {  # expect_completion WANTED WORD...
  local want="$1"; shift
  local got
  got=$(complete_words "$@")
  if ! grep -qxF -- "$want" <<< "$got"; then
    fail "bash completion of '$*' gave [$(tr '\n' ' ' <<< "$got")], expected it to offer $want"
  else
    echo "ok: '$*' completes to $want"
  fi
}
expect_completion load memra lo
expect_completion load memra -q lo
expect_completion --quiet memra --qu
expect_completion devices memra dev
expect_completion --json memra devices --j
# A long option of load, as load's own help lists it (--json once load has it).
load_opt=$("$bin" load --help | grep -o -- '--json' | head -n 1)
[[ -n "$load_opt" ]] || load_opt=$("$bin" load --help | grep -oE -- '--[a-z][a-z0-9-]*' | grep -vx -- '--help' | head -n 1)
[[ -n "$load_opt" ]] || load_opt=--help
expect_completion "$load_opt" memra load "${load_opt:0:3}"
# Paths: a file-valued place offers files from the folder being typed.
touch "$work/probe-file.txt"
mkdir -p "$work/probe-dir"
file_opt=$(awk '/_memra_files "\$cur"; return 0 ;;/ { print; exit }' "$work/gen/completions/memra.bash" |
  sed -E 's/^ *"([^"]*)".*/\1/')
if [[ -n "$file_opt" ]]; then
  read -r -a words <<< "$file_opt"
  expect_completion "$work/probe-file.txt" "${words[@]}" "$work/probe-f"
fi

if (( fails )); then
  echo "$fails check(s) failed"
  exit 1
fi
echo "docs are fresh and complete"
