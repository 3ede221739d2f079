#!/usr/bin/env bash
# shell.install: `cmake --install BUILD --prefix P` puts memra where a Debian user looks for it:
# P/bin/memra, the man pages in P/share/man/man1 (read back with `man -M P/share/man memra`), the
# bash/zsh/fish completions in the shells' vendor folders, and the bundled models in
# P/share/memra/models; `memra gate all` with no MODEL then runs on the installed bundled model.
# The mutation-test binary memra_faults is never installed.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC, MEMRA_BUILD.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
build="${MEMRA_BUILD:-$src/build}"
[[ -f "$build/cmake_install.cmake" ]] || { echo "FAIL: $build has no cmake_install.cmake (configure it first)"; exit 1; }
command -v man >/dev/null || { echo "skip: the man command is not installed (Debian package man-db)"; exit 77; }
prefix="$(mktemp -d "${TMPDIR:-/tmp}/memra_install.XXXXXX")"
trap 'rm -rf "$prefix"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }

cmake --install "$build" --prefix "$prefix" > "$prefix.log" 2>&1 || { cat "$prefix.log"; rm -f "$prefix.log"; echo "FAIL: cmake --install"; exit 1; }
rm -f "$prefix.log"
for f in bin/memra share/man/man1/memra.1 share/man/man1/memra-gate-all.1 share/man/man1/memra-parity.1 \
         share/bash-completion/completions/memra share/zsh/vendor-completions/_memra \
         share/fish/vendor_completions.d/memra.fish share/memra/models/tiny/config.json \
         share/memra/models/tiny/model.safetensors share/memra/models/tiny/dump/manifest.json \
         share/memra/models/tiny-bf16/config.json share/memra/models/prompt.txt; do
  [[ -f "$prefix/$f" ]] && echo "ok: installed $f" || bad "not installed: $f"
done
[[ -x "$prefix/bin/memra" ]] || bad "bin/memra is not executable"
if find "$prefix" -name 'memra_faults*' | grep -q .; then bad "memra_faults was installed"; fi
if [[ -f "$build/memra_cuda.so" || -f "$build/libmemra_cuda.so" ]]; then
  [[ -f "$prefix/lib/memra/libmemra_cuda.so" ]] && echo "ok: installed lib/memra/libmemra_cuda.so" || bad "libmemra_cuda.so not installed"
fi

# The installed binary runs, and reads its man page from the installed tree.
"$prefix/bin/memra" --version > "$prefix/version" 2>&1 && grep -q "^memra " "$prefix/version" \
  && echo "ok: $(head -1 "$prefix/version")" || bad "installed memra --version: $(cat "$prefix/version")"
MANWIDTH=100 man -M "$prefix/share/man" memra > "$prefix/man.txt" 2> "$prefix/man.err" || bad "man -M P/share/man memra: $(cat "$prefix/man.err")"
grep -q "memra-gate(1)" "$prefix/man.txt" && echo "ok: man -M $prefix/share/man memra" || bad "the installed man page lacks memra-gate(1)"
MANWIDTH=100 man -M "$prefix/share/man" memra-gate-all > "$prefix/man2.txt" 2>&1 && grep -q "bundled" "$prefix/man2.txt" \
  && echo "ok: man memra-gate-all names the bundled default" || bad "man memra-gate-all does not mention the bundled model"

# gate all without MODEL: the installed bundled model (the note names it), every gate passes.
(cd "$prefix" && "$prefix/bin/memra" gate all > "$prefix/gate.out" 2> "$prefix/gate.err")
rc=$?
[[ $rc -eq 0 ]] || { bad "installed 'memra gate all' exited $rc"; cat "$prefix/gate.out" "$prefix/gate.err"; }
grep -q "bundled model $prefix/share/memra/models/tiny" "$prefix/gate.err" \
  && echo "ok: gate all ran on $prefix/share/memra/models/tiny" || { bad "gate all did not use the installed model"; cat "$prefix/gate.err"; }
grep -q '^\[parity\] PASS' "$prefix/gate.out" && grep -q '^\[gate-all\] PASS' "$prefix/gate.out" \
  && echo "ok: $(tail -1 "$prefix/gate.out")" || { bad "gate all on the installed model did not pass every gate"; cat "$prefix/gate.out"; }
[[ $fail -eq 0 ]] && echo "1 passed, 0 failed"
exit $fail
