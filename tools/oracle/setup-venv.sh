#!/usr/bin/env bash
# Creates (or reuses) the memra oracle's Python venv and installs tools/oracle/requirements.txt, then
# tools/oracle/requirements-nodeps.txt with --no-deps (packages whose declared pins we override).
#
# The venv lives outside the clone: ${MEMRA_VENV:-$HOME/.cache/memra/venv}. Idempotent: pip only
# runs when the requirements' sha256 (both files) differs from the stamp recorded in the venv. Prints the venv's
# python path on stdout (diagnostics on stderr), so scripts can do: PY=$(tools/oracle/setup-venv.sh)
# Env: MEMRA_VENV (venv path), PYTHON (interpreter used to create it, default python3),
#      PIP_INDEX_URL / PIP_EXTRA_INDEX_URL as usual (e.g. https://download.pytorch.org/whl/cpu for a
#      CPU-only torch wheel).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
req="$here/requirements.txt"
req_nodeps="$here/requirements-nodeps.txt"
venv="${MEMRA_VENV:-$HOME/.cache/memra/venv}"
stamp="$venv/.memra-requirements.sha256"

if [[ ! -x "$venv/bin/python" ]]; then
  echo "setup-venv: creating $venv" >&2
  mkdir -p "$(dirname "$venv")"
  "${PYTHON:-python3}" -m venv "$venv" >&2
fi

want="$(cat "$req" "$req_nodeps" | sha256sum | cut -d' ' -f1)"
have="$(cat "$stamp" 2>/dev/null || true)"
if [[ "$want" != "$have" ]]; then
  echo "setup-venv: installing $req into $venv" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check -q -r "$req" >&2
  "$venv/bin/python" -m pip install --disable-pip-version-check -q --no-deps -r "$req_nodeps" >&2
  echo "$want" > "$stamp.tmp.$$" && mv "$stamp.tmp.$$" "$stamp"
else
  echo "setup-venv: $venv is up to date" >&2
fi
echo "$venv/bin/python"
