#!/bin/sh
# Prepares a Debian 13 image for the CUDA LibTorch (worker-gpu-debian.Dockerfile):
#   1. contrib and non-free, where libtorch-cuda, NCCL, the CUDA toolkit and nvidia-cudnn live;
#   2. NVIDIA's cuDNN license answered, only when the builder accepted it (argument "yes");
#      otherwise stop here with the reason: nvidia-cudnn's installer asks for it;
#   3. /tmp/stand-ins/ddp-host-libcuda.deb, an empty package that provides libcuda.so.1 and
#      libnvidia-ml.so.1 (NVML, which nvidia-cuda-dev pulls in through libnvidia-ml-dev), so apt
#      installs neither of Debian's driver libraries: the host's come with the NVIDIA container
#      toolkit at run time, and two driver libraries of different versions do not mix.
set -eu
if [ "${1:-}" != yes ]; then
  echo "worker-gpu-debian: Debian's CUDA LibTorch needs cuDNN, which nvidia-cudnn downloads from" \
       "NVIDIA under NVIDIA's cuDNN license; build with --build-arg ACCEPT_NVIDIA_CUDNN_LICENSE=yes" \
       "if you accept it" >&2
  exit 1
fi
sed -i 's/^Components: main$/Components: main contrib non-free/' /etc/apt/sources.list.d/debian.sources
grep -q '^Components: main contrib non-free$' /etc/apt/sources.list.d/debian.sources || {
  echo "worker-gpu-debian: could not enable contrib and non-free in debian.sources" >&2; exit 1; }
echo 'nvidia-cudnn nvidia-cudnn/question select I Agree' | debconf-set-selections
mkdir -p /tmp/stand-ins/pkg/DEBIAN
cat >/tmp/stand-ins/pkg/DEBIAN/control <<'CONTROL'
Package: ddp-host-libcuda
Version: 1.0
Architecture: all
Maintainer: ddp images <nobody@invalid>
Provides: libcuda.so.1 (= 550.0), libcuda1 (= 550.0), libnvidia-ml.so.1 (= 550.0), libnvidia-ml1 (= 550.0)
Description: the host's CUDA driver libraries, mounted at run time
 Installs nothing: the NVIDIA container toolkit mounts the host driver's libcuda.so.1
 and libnvidia-ml.so.1.
CONTROL
dpkg-deb --build /tmp/stand-ins/pkg /tmp/stand-ins/ddp-host-libcuda.deb >/dev/null
