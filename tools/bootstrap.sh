#!/usr/bin/env bash
# Fresh Debian machine → installed dependencies, a build, and memra's main job on the bundled model.
#   tools/bootstrap.sh            (re-running is cheap: apt, the venv and the build are incremental)
# Env: BUILD_DIR (default build), MEMRA_VENV (default ~/.cache/memra/venv), MEMRA_SKIP_APT=1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${BUILD_DIR:-$root/build}"
sudo=""; [[ $(id -u) -ne 0 ]] && sudo="sudo"

if [[ "${MEMRA_SKIP_APT:-0}" != 1 ]]; then
  # libsodium-dev: keyed BLAKE2b tags of state files; clang + libclang-rt-dev: the sanitizer build
  # (ASan/UBSan tests, the ASan CLI and the libFuzzer targets); pkg-config + libpcre2-dev: the
  # tokenizer; chromium zsh fish man-db: report rendering, completion and install (man -M) tests.
  pkgs=(build-essential cmake ninja-build ccache git python3 python3-venv libcli11-dev nlohmann-json3-dev libxxhash-dev catch2
        libsodium-dev clang libclang-rt-dev
        pkg-config libpcre2-dev
        chromium zsh fish man-db)
  missing=()
  for p in "${pkgs[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if [[ ${#missing[@]} -gt 0 ]]; then
    echo "bootstrap: installing ${missing[*]}" >&2
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >&2
  fi
fi

# The Python oracle (torch + transformers, CPU) lives in a venv outside the clone.
"$root/tools/oracle/setup-venv.sh" >/dev/null

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release >&2
cmake --build "$build" >&2

# The main job: every gate that applies to the bundled model.
"$build/memra" gate all "$root/models/tiny"
