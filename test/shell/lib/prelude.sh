# Shared by the shell tests that source it first: src (the source tree, MEMRA_SRC or two folders up),
# work (a temporary folder, removed at exit), fail=0, expect (lib/expect.sh), and `need CMD`: the test
# reports itself skipped (exit 77) where CMD is not installed.
src="${MEMRA_SRC:-$(cd "$(dirname "${BASH_SOURCE[1]}")/../.." && pwd)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail=0
source "$(dirname "${BASH_SOURCE[0]}")/expect.sh"
need() { command -v "$1" >/dev/null || { echo "skip: $1 is not installed"; exit 77; }; }
