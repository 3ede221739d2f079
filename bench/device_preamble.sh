# bench/device_preamble.sh: the start every device run's command (bench/results/*/command.sh) shares,
# sourced from the repository root after `set -uo pipefail`: unpack the carried binaries
# (tools/gpu-check.sh --unpack) and name them.
#   P   the carried pack (build-gpu-pack)      t   its memra_cuda_test
#   m   its memra                              el  prints the seconds since the preamble ran
# NCCL's NVLink multicast stays off (the lent machines' rule), and the pack's libraries come first.
bash tools/gpu-check.sh --unpack
P=$PWD/build-gpu-pack
t=$P/bin/memra_cuda_test
m=$P/bin/memra
export NCCL_NVLS_ENABLE=0 LD_LIBRARY_PATH=$P/bin
T0=$(date +%s)
el() { echo "t=$(($(date +%s) - T0))s"; }
