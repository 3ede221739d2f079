# Run 169's preparation on the dev machine, from the repository root with build-cuda configured
# (cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMEMRA_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90a):
# the pack, then two more libraries (a patch applied, built, reverted) as the pack's arms `planted`
# (planted.patch) and `rna` (rna.patch), ~25 MB. Then move bench/results' other runs, test/fixtures
# and models/drafters aside (the carry's 64 MiB: the tree is then ~24 MB), `run` command.sh with
# carry build-gpu-pack, and put them back.
set -euo pipefail
here=bench/results/h200-20261204-169
ninja -C build-cuda memra memra_cuda memra_cuda_test
rm -rf build-gpu-pack && PACK_BUILD=build-cuda tools/gpu-check.sh --pack && rm -rf build-gpu-pack/deps
# arm(NAME, PATCH): the library built with PATCH applied, carried as the pack's NAME.
arm() {
  git apply "$here/$2" || return 1
  local ok=0
  ninja -C build-cuda memra_cuda && mkdir -p "build-gpu-pack/$1" &&
    xz -T0 -6 -c build-cuda/libmemra_cuda.so > "build-gpu-pack/$1/libmemra_cuda.so.xz" || ok=1
  git apply -R "$here/$2"  # the tree as committed again, whatever happened
  return $ok
}
arm planted planted.patch  # the ops checks' plants
arm rna rna.patch          # the TF32 conversion as before (ties away): the A/B's rna arm
ninja -C build-cuda memra_cuda
