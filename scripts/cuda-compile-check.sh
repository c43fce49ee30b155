#!/usr/bin/env bash
# `make cuda-check`: compile and link every CUDA and NCCL path of the worker (ddp-worker, the
# NCCL communicator and its tests, the gpu tests) against what a Debian 13 GPU image carries:
# LibTorch 2.6 built for CUDA 12.4 (libtorch-cuda-dev), NCCL 2.22 (libnccl-dev) and the CUDA 12.4
# toolkit, in a root of its own (scripts/debian-root.sh trixie-cuda: libtorch-cuda-dev conflicts
# with the CPU libtorch-dev of the test root). Nothing runs: there is no GPU here.
#
# cuDNN: Debian's libtorch-cuda-2.6 depends on `nvidia-cudnn`, a package whose installation
# downloads cuDNN from NVIDIA's site, which this build cannot reach. The check installs a
# stand-in package of that name instead (made here with dpkg-deb, no files), so libcudnn.so.9 is
# absent: the links tolerate undefined symbols of shared libraries (--allow-shlib-undefined),
# which resolve on a machine where the real cuDNN is installed. Every symbol of our own code and
# of LibTorch, NCCL and the CUDA runtime is still resolved at link time.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --inside ]; then
  jobs=$2 tree=$3
  export CCACHE_DIR=/var/cache/ccache CCACHE_MAXSIZE=5G
  # One tree at a time (as in test-other-release.sh): another checkout's older files would pass
  # for up to date.
  if [ "$(cat /build-cuda/.ddp-tree 2>/dev/null)" != "$tree" ]; then rm -rf /build-cuda; fi
  mkdir -p /build-cuda && echo "$tree" >/build-cuda/.ddp-tree
  # The test binaries cannot start here (no driver's libcuda, no cuDNN): gtest's discovery runs
  # them when ctest does (PRE_TEST), not right after each link.
  cmake -S /src -B /build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_BUILD_OPERATOR=OFF \
    -DDDP_BUILD_BENCH=OFF -DDDP_BUILD_FUZZ=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache \
    -DCMAKE_EXE_LINKER_FLAGS=-Wl,--allow-shlib-undefined \
    -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST >/build-cuda/configure.log 2>&1 ||
    { cat /build-cuda/configure.log; exit 1; }
  grep -E '^-- ddp-' /build-cuda/configure.log || true
  grep -q 'ddp-worker: NCCL found' /build-cuda/configure.log ||
    { echo "cuda-check: CMake did not find NCCL and CUDA: the check would build the CPU worker" >&2; exit 1; }
  cmake --build /build-cuda -j "$jobs" --target ddp-worker worker_gpu_test worker_nccl_test \
    worker_nccl_communicator_test
  # The binary must really be the CUDA one: LibTorch's CUDA library and NCCL among its needs.
  needed=$(readelf -d /build-cuda/worker/ddp-worker | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p')
  for lib in libtorch_cuda.so libnccl.so libcudart.so; do
    echo "$needed" | grep -q "^$lib" || { echo "cuda-check: ddp-worker does not link $lib*" >&2; exit 1; }
  done
  echo "cuda-check: ddp-worker, worker_gpu_test, worker_nccl_test and worker_nccl_communicator_test" \
       "compiled and linked against LibTorch $(sed -n 's/.*LibTorch \([0-9.]*\) found.*/\1/p' /build-cuda/configure.log)" \
       "(CUDA), NCCL $(dpkg-query -W -f='${Version}' libnccl-dev) and CUDA $(sed -n 's/.*), CUDA \([0-9.]*\)$/\1/p' /build-cuda/configure.log | head -n 1)"
  exit 0
fi

as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }
root=trixie-cuda
t0=$SECONDS
bash "$here/debian-root.sh" ensure "$root" cmake ninja-build g++ pkg-config ccache binutils \
  libyaml-cpp-dev prometheus-cpp-dev libgtest-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit
r=$(bash "$here/debian-root.sh" path "$root")
if ! as_root chroot "$r" dpkg-query -W -f='${Status}' libtorch-cuda-dev 2>/dev/null | grep -q "install ok installed"; then
  stub=$(mktemp -d)
  mkdir -p "$stub/pkg/DEBIAN"
  # The version of trixie's nvidia-cudnn, so that every dependency on it is met.
  ver=$(as_root chroot "$r" apt-cache show --no-all-versions nvidia-cudnn | sed -n 's/^Version: //p')
  printf '%s\n' "Package: nvidia-cudnn" "Version: $ver" "Architecture: amd64" \
    "Maintainer: ddp cuda-check <nobody@invalid>" "Section: contrib/libs" "Priority: optional" \
    "Description: stand-in for the cuDNN downloader (compiling only)" \
    " Installs nothing: scripts/cuda-compile-check.sh links without libcudnn." >"$stub/pkg/DEBIAN/control"
  as_root dpkg-deb --build "$stub/pkg" "$r/tmp/nvidia-cudnn-stand-in.deb" >/dev/null
  rm -rf "$stub"
  echo "[cuda-check] installing libtorch-cuda-dev with a stand-in for nvidia-cudnn"
  bash "$here/debian-root.sh" run "$root" /bin/sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
    --no-install-recommends /tmp/nvidia-cudnn-stand-in.deb libtorch-cuda-dev && apt-get clean' >"$r.torch.log" 2>&1 ||
    { tail -n 30 "$r.torch.log" >&2; echo "cuda-check: installing libtorch-cuda-dev failed" >&2; exit 1; }
fi
bash "$here/debian-root.sh" run "$root" /bin/bash /src/scripts/cuda-compile-check.sh --inside "${JOBS:-$(nproc)}" \
  "$(cd "$here/.." && pwd)"
echo "[cuda-check] done in $((SECONDS - t0)) s"
