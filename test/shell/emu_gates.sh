#!/usr/bin/env bash
# shell.emu_gates: `memra gate all --backend cuda` on the bundled tiny model through memra-emu
# (libmemra_cuda_emu.so by MEMRA_CUDA_LIB, kernels/emu/README.md): the CLI's CUDA path (loading
# the backend library, then the restore, chunk, semantics, parity and fused-moe gates) on the
# kernels' own code, without a GPU. Skipped (77) when the emulated library was not built.
# Env (set by CTest): MEMRA_BIN, MEMRA_SRC, MEMRA_BUILD.
set -uo pipefail
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
bin="${MEMRA_BIN:-memra}"
lib="${MEMRA_BUILD:-$src/build}/libmemra_cuda_emu.so"
[[ -f "$lib" ]] || { echo "skip: $lib is not built (memra-emu needs the CUDA toolkit's headers)"; exit 77; }
out=$(MEMRA_CUDA_LIB="$lib" "$bin" -q gate all "$src/models/tiny" --backend cuda 2>&1); rc=$?
echo "$out"
if [[ $rc -ne 0 ]] || ! grep -q "^\[gate-all\] PASS gates=5 passed=5" <<<"$out"; then
  echo "FAIL: gate all --backend cuda on memra-emu rc=$rc"
  exit 1
fi
echo "1 passed, 0 failed"
