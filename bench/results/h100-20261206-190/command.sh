# Run 190: the class-hash kernel at 512 threads a class (default) against 1024 (one block an SM,
# 31 fill warps, tiles of 248 blocks): the ops 'hash' group in both forms, then the devices'
# hashing alone and the snapshot of (a) the 1 GiB V4-Flash-layout state (314 classes) and (b) the
# bench's 2-layer CH model at 1 GiB (v4-ch/config.json from run 181's bench: one CSA entries class
# holds ~78% of the bytes, so its chain's rate is what the hashing alone reads), each arm once.
# LIMIT: this call's seconds.
set -uo pipefail
cd "$(dirname "$0")/../../.."
source bench/device_preamble.sh
$m --version | head -1
for arm in 512 1024; do
  MEMRA_CUDA_HASH_THREADS=$arm timeout 60 $t ops --only hash > $OUT/ops-hash-$arm.txt 2>&1; echo "ops hash $arm rc=$? $(tail -1 $OUT/ops-hash-$arm.txt)"
done
for model in v4-flash bench/results/run-190/v4-ch; do
  for arm in 512 1024; do
    f=$OUT/bandwidth-$(basename $model)-$arm.txt
    MEMRA_CUDA_HASH_THREADS=$arm timeout 60 $t bandwidth $model --gib 1.0 > $f 2>&1; echo "bandwidth $(basename $model) $arm rc=$?"
    grep -E "^state:|class hashes on|alone, on the device|snapshot >=" $f
  done
  el
done
