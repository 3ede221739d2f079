#!/usr/bin/env bash
# Copies the pure-Python package that the DFlash oracle imports (z-lab's dflash, MIT, pinned in
# requirements-nodeps.txt) from the oracle venv into build/pydeps/ (ignored by git), for a machine
# that has torch and transformers but no network: carry build/pydeps there; tools/oracle/train-pair.sh
# puts it on PYTHONPATH. Only dflash/__init__.py, dflash/model.py and the licence are copied
# (dflash.model needs torch and transformers' Qwen3 modules, nothing else).
#   tools/oracle/stage-pydeps.sh        (prints the folder)
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
py="${PYTHON:-$("$root/tools/oracle/setup-venv.sh")}"
src="$("$py" -c 'import os, dflash.model as m; print(os.path.dirname(m.__file__))')"
dst="$root/build/pydeps/dflash"
rm -rf "$dst" && mkdir -p "$dst"
cp "$src/__init__.py" "$src/model.py" "$dst/"
lic="$(ls -d "$src"/../dflash-*.dist-info 2>/dev/null | head -n 1)"
[[ -n "$lic" ]] && find "$lic" -type f -iname 'LICENSE*' -exec cp {} "$dst/LICENSE" \;
echo "$root/build/pydeps"
