#!/usr/bin/env bash
# The images, built and run (ctest label `image`): scripts/build-images.sh builds
# dockerfiles/operator.Dockerfile and worker-cpu.Dockerfile (or, with DDP_IMAGE_TEST_NO_BUILD=1,
# the images already built are used); each binary starts in its image as uid:gid 65532:65532;
# two containers of the worker image train 2 ranks over 127.0.0.1 (host network) to the same
# parameter checksum, and the checkpoint they write on a mounted directory belongs to 65532:65532.
#
#   tests/delivery/image_run_test.sh SOURCE_ROOT
# Exit 0: passed; 77: skipped (no builder or engine, or no base image), with the reason; 1: failed.
set -uo pipefail
root=$(cd "${1:?usage: image_run_test.sh SOURCE_ROOT}" && pwd)
TAG=${TAG:-0.1.0}
skip() { echo "SKIPPED: $*"; exit 77; }
fail() { echo "FAILED: $*"; exit 1; }
# Building both images from nothing takes tens of minutes on a small machine: `make test` runs it
# only when asked (`make image-test` asks).
[ "${DDP_IMAGE_TEST:-0}" = 1 ] || skip "set DDP_IMAGE_TEST=1 (make image-test) to build and run the images"

builder=$("$root/scripts/build-images.sh" --builder 2>&1) || skip "$builder"
# Running containers needs docker or podman (buildah builds only).
engine=$builder
if [ "$engine" = buildah ]; then
  command -v podman >/dev/null 2>&1 && engine=podman || skip "buildah builds but cannot run containers: install podman or docker"
fi
echo "builder $builder, engine $engine"

have_image() { "$engine" image inspect "$1" >/dev/null 2>&1; }

if [ "${DDP_IMAGE_TEST_NO_BUILD:-0}" != 1 ]; then
  # operator: bookworm; worker-cpu: trixie by default (its bookworm runtime stage may be built too)
  for base in debian:bookworm debian:bookworm-slim debian:trixie debian:trixie-slim; do
    if ! have_image "$base" && ! timeout 300 "$engine" pull "$base" >/dev/null 2>&1; then
      skip "no base image $base: not in $engine's store and it cannot be pulled"
    fi
  done
  t0=$(date +%s)
  TAG=$TAG "$root/scripts/build-images.sh" > "${TMPDIR:-/tmp}/ddp-image-build.$$.log" 2>&1 \
    || { tail -n 40 "${TMPDIR:-/tmp}/ddp-image-build.$$.log"; fail "scripts/build-images.sh failed"; }
  grep '^build-images:' "${TMPDIR:-/tmp}/ddp-image-build.$$.log"
  rm -f "${TMPDIR:-/tmp}/ddp-image-build.$$.log"
  echo "images built in $(( $(date +%s) - t0 )) s"
fi
op=ddp-operator:$TAG wk=ddp-worker-cpu:$TAG
for img in "$op" "$wk"; do have_image "$img" || fail "no image $img (build it: make images)"; done

# 1. Each binary starts, as the image's user: uid and gid 65532 (USER 65532:65532).
for pair in "$op:ddp-operator" "$wk:ddp-worker"; do
  img=${pair%:*}; bin=${pair##*:}
  out=$("$engine" run --rm --entrypoint sh "$img" -c "echo ids=\$(id -u):\$(id -g); $bin --help >/dev/null 2>&1; echo help=\$?" 2>&1)
  echo "$img: $out"
  grep -qx 'ids=65532:65532' <<<"$out" || fail "$img does not run as 65532:65532: $out"
  grep -qx 'help=0' <<<"$out" || fail "$bin --help does not start in $img: $out"
done

# 2. Two ranks in two containers, host network, rendezvous on 127.0.0.1.
dir=$(mktemp -d "${TMPDIR:-/tmp}/ddp-image-test.XXXXXX")
chmod 0777 "$dir"  # a hostPath-like mount: fsGroup does not apply, the directory must be writable
names=(ddp-image-test-$$-0 ddp-image-test-$$-1)
cleanup() { "$engine" rm -f "${names[@]}" >/dev/null 2>&1; rm -rf "$dir"; }
trap cleanup EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
steps=20
for r in 0 1; do
  "$engine" run -d --name "${names[$r]}" --network host -v "$dir:/ckpt" \
    -e MASTER_ADDR=127.0.0.1 -e MASTER_PORT="$port" -e WORLD_SIZE=2 -e RANK=$r -e LOCAL_RANK=0 \
    -e LOCAL_WORLD_SIZE=1 -e DDP_RENDEZVOUS_TIMEOUT=120 -e GLOO_SOCKET_IFNAME=lo -e OMP_NUM_THREADS=1 \
    "$wk" --model=mingpt --dataset=synthetic --steps=$steps --batch-size=8 --n-layer=1 --n-embd=32 \
    --block-size=16 --log-every=10 --checkpoint-dir=/ckpt --checkpoint-every=$steps --threads=1 \
    >/dev/null || fail "$engine run of rank $r failed"
done
t0=$(date +%s)
for r in 0 1; do
  # A hard deadline: a rank that hangs fails the test instead of holding it.
  while [ "$("$engine" inspect -f '{{.State.Running}}' "${names[$r]}" 2>/dev/null)" = true ]; do
    [ $(( $(date +%s) - t0 )) -lt 300 ] || { "$engine" logs "${names[$r]}" 2>&1 | tail -20; fail "rank $r still running after 300 s"; }
    sleep 1
  done
done
sums=()
for r in 0 1; do
  code=$("$engine" inspect -f '{{.State.ExitCode}}' "${names[$r]}")
  log=$("$engine" logs "${names[$r]}" 2>&1)
  [ "$code" = 0 ] || { echo "$log" | tail -20; fail "rank $r exited $code"; }
  line=$(grep -o "summary rank=$r world_size=2 step=$steps .*" <<<"$log") || { echo "$log" | tail -20; fail "rank $r: no summary at step $steps"; }
  sums[$r]=$(grep -o 'param_checksum=[0-9a-f]*' <<<"$line")
  echo "rank $r: ${sums[$r]} (after $(( $(date +%s) - t0 )) s)"
done
[ -n "${sums[0]}" ] && [ "${sums[0]}" = "${sums[1]}" ] || fail "checksums differ: ${sums[0]} vs ${sums[1]}"
owner=$(find "$dir" -path "*step-$(printf %08d $steps)" -type d -printf '%U:%G\n' | head -1)
[ "$owner" = 65532:65532 ] || fail "checkpoint of step $steps under $dir owned by '${owner:-nobody}', not 65532:65532 (ls: $(ls -ln "$dir"))"
echo "checkpoint step $steps written as $owner"
echo "PASSED"
