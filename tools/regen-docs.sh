#!/usr/bin/env bash
# Regenerates the committed man pages (man/) and shell completions (completions/) from the CLI
# definition: builds memra if needed, then runs `memra generate all --dir <source tree>`.
# Run it after changing any subcommand, option or description; test/shell/docs_fresh.sh fails
# until you do.
#   tools/regen-docs.sh [BUILD_DIR]     (default: $MEMRA_BUILD, else build)
set -euo pipefail
src="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${MEMRA_BUILD:-$src/build}}"
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  generator=()
  command -v ninja >/dev/null && generator=(-G Ninja)
  cmake -S "$src" -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" --target memra >/dev/null
"$build/memra" generate all --dir "$src"
git -C "$src" status --short -- man completions 2>/dev/null || true
