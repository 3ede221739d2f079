#!/usr/bin/env bash
# shell.devices: `memra devices` answers through the lazy CUDA loader and exits 0 whether or not
# there is a GPU; the memra binary itself never links the CUDA runtime or cuBLAS (they live only
# in libmemra_cuda.so, loaded on first use), so CPU-only commands start without them.
# Env (set by CTest): MEMRA_BIN, MEMRA_BUILD.
set -uo pipefail

bin="${MEMRA_BIN:-memra}"
work="$(mktemp -d "${TMPDIR:-/tmp}/devices.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }

# 1. The binary does not link CUDA libraries directly.
if ! command -v ldd >/dev/null; then
  fail "ldd is not installed: cannot check what $bin links"
else
  linked=$(ldd "$bin" 2>&1)
  if grep -Ei 'libcudart|libcublas|libcuda\.so|libmemra_cuda' <<< "$linked"; then
    fail "$bin links CUDA libraries directly (above); they must be loaded lazily through libmemra_cuda.so"
  else
    echo "ok: $bin links no CUDA library"
  fi
fi

# 2. memra devices: exit 0, one line per device or one line saying why there is none.
out=$("$bin" devices 2> "$work/err"); rc=$?
echo "memra devices -> rc $rc: $out"
[[ $rc -eq 0 ]] || { cat "$work/err"; fail "memra devices exited $rc, expected 0"; }
lib_dir=$(dirname "$bin")
gpus=0
if [[ -f "$lib_dir/libmemra_cuda.so" ]] && command -v nvidia-smi >/dev/null; then
  gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
fi
if (( gpus > 0 )); then
  [[ $(grep -c '^cuda:[0-9]' <<< "$out") -eq $gpus ]] || fail "expected $gpus 'cuda:N' lines (nvidia-smi -L), got: $out"
else
  grep -qE '^no CUDA devices: (CUDA backend not built|no CUDA device|CUDA backend .* cannot be loaded)' <<< "$out" ||
    fail "expected the one-line no-device answer, got: $out"
fi

# 3. --json: one document with the state, and devices matching the text answer.
json=$("$bin" devices --json); rc=$?
[[ $rc -eq 0 ]] || fail "memra devices --json exited $rc"
python3 - "$json" "$gpus" <<'PY' || fail "memra devices --json: unexpected document: $json"
import json, sys
doc = json.loads(sys.argv[1]); gpus = int(sys.argv[2])
assert doc["backend"] == "cuda"
assert doc["state"] in ("ready", "not_built", "load_failed", "no_device"), doc["state"]
assert isinstance(doc["message"], str) and doc["message"]
assert len(doc["devices"]) == gpus, (len(doc["devices"]), gpus)
assert (doc["state"] == "ready") == (gpus > 0)
PY

# 4. MEMRA_CUDA_LIB pointing nowhere: still exit 0, and the answer names the variable.
out=$(MEMRA_CUDA_LIB=/nonexistent/libmemra_cuda.so "$bin" devices 2>/dev/null); rc=$?
[[ $rc -eq 0 ]] || fail "MEMRA_CUDA_LIB=/nonexistent: exit $rc, expected 0"
grep -q 'MEMRA_CUDA_LIB' <<< "$out" || fail "MEMRA_CUDA_LIB=/nonexistent: answer does not name the variable: $out"

# 5. A file that is not a CUDA backend: reported as not loadable, exit 0.
junk="$work/libjunk.so"; echo "not a library" > "$junk"
out=$(MEMRA_CUDA_LIB="$junk" "$bin" devices 2>/dev/null); rc=$?
[[ $rc -eq 0 ]] || fail "MEMRA_CUDA_LIB=junk: exit $rc, expected 0"
grep -q 'cannot be loaded' <<< "$out" || fail "MEMRA_CUDA_LIB=junk: expected 'cannot be loaded', got: $out"

(( fails )) && exit 1
echo "devices ok"
