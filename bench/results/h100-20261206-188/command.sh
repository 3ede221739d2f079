# Run 188: the whole gpu-check on the session's final code (415fc06: the snapshot's class hashes on
# the device; later commits change docs only), with its full budget.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
whole_check 60
