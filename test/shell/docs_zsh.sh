#!/usr/bin/env bash
# shell.docs_zsh: the zsh completion (generated now, and the committed completions/_memra) parses,
# loads under compinit, registers _memra for memra and defines one function per visible command;
# and an interactive zsh (driven through zpty) completes `memra lo<Tab>` to `memra load`.
# Skips (77) when zsh is not installed: the freshness of the file itself is shell.docs_fresh's job.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC.
set -uo pipefail

src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
if ! command -v zsh >/dev/null; then
  echo "SKIP: zsh is not installed (apt-get install zsh to run this test)"
  exit 77
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/docs_zsh.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

"$bin" generate zsh --out "$work/_memra" || { echo "FAIL: $bin generate zsh failed"; exit 1; }
subs=$("$bin" --help | awk '/^Subcommands:/ { on = 1; next } on && /^  [a-z]/ { print $1 } on && /^[^ ]/ { on = 0 }')
for f in "$work/_memra" "$src/completions/_memra"; do
  [[ -f "$f" ]] || { fail "missing $f"; continue; }
  zsh -n "$f" || { fail "zsh -n $f: syntax error"; continue; }
  functions="_memra"
  for s in $subs; do functions+=" _memra_${s//-/_}"; done
  if ! out=$(HOME="$work" zsh -f -c '
      autoload -U compinit && compinit -u -d "$HOME/zcompdump" || exit 1
      source "$1" || exit 1
      [[ ${_comps[memra]} == _memra ]] || { echo "memra is not bound to _memra"; exit 1 }
      for f in ${=2}; do (( $+functions[$f] )) || { echo "no function $f"; exit 1 }; done' _ "$f" "$functions" 2>&1); then
    fail "$f does not load under compinit: $out"
  else
    echo "ok: $f parses and loads"
  fi
done
# Completion at work: type a line and Tab into an interactive zsh, read back what it redraws.
cat > "$work/drive.zsh" <<'ZSH'
zmodload zsh/zpty
zpty z 'zsh -f -i'
zpty -w z "PS1=''; autoload -U compinit; compinit -u -d ${(q)HOME}/zcompdump; source ${(q)1}"
zpty -wn z "$2"$'\t'
local out="" chunk
integer deadline=$(( SECONDS + 10 ))
while (( SECONDS < deadline )); do
  if zpty -rt z chunk 2>/dev/null; then out+=$chunk; else sleep 0.1; fi
  [[ $out == *"$3"* ]] && break
done
zpty -d z
print -r -- "$out"
ZSH
expect() {  # expect TYPED SHOWN: after TYPED<Tab> the line reads SHOWN
  if HOME="$work" zsh -f "$work/drive.zsh" "$work/_memra" "$1" "$2" | grep -qF -- "$2"; then
    echo "ok: '$1<Tab>' completes to '$2'"
  else
    fail "zsh did not complete '$1<Tab>' to '$2'"
  fi
}
expect "memra lo" "memra load"
expect "memra devices --js" "memra devices --json"
(( fails )) && exit 1
echo "zsh completion ok"
