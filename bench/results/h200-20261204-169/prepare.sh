# Run 169's preparation on the dev machine, from the repository root with build-cuda configured
# (cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a):
# the pack, then the planted library (planted.patch applied, built, reverted) as the pack's arm
# `planted`. Then move bench/results' other runs aside (the 64 MiB carry), `run` command.sh with
# carry build-gpu-pack, and put them back.
set -euo pipefail
here=bench/results/h200-20261204-169
ninja -C build-cuda memra memra_cuda memra_cuda_test
rm -rf build-gpu-pack && PACK_BUILD=build-cuda tools/gpu-check.sh --pack && rm -rf build-gpu-pack/deps
git apply "$here/planted.patch"
trap 'git apply -R "$here/planted.patch" && ninja -C build-cuda memra_cuda' EXIT
ninja -C build-cuda memra_cuda
mkdir -p build-gpu-pack/planted && xz -T0 -6 -c build-cuda/libmemra_cuda.so > build-gpu-pack/planted/libmemra_cuda.so.xz
