#!/usr/bin/env bash
# Builds (incrementally) and runs the whole test suite: Catch2 tests, sanitizer parser tests, shell
# pipelines and the oracle comparisons on fresh random checkpoints.
#   tools/test.sh [extra ctest args]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
[[ -f "$build/CMakeCache.txt" ]] || cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build "$build"
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" "$@"
