# ddp-worker for GPUs from Debian 13 packages alone: LibTorch 2.6 built for CUDA 12.4
# (libtorch-cuda-dev, contrib), NCCL 2.22 (libnccl-dev, contrib), the CUDA 12.4 toolkit and
# runtime (non-free). No PyTorch wheel, no NVIDIA base image. Build from the repository root:
#   docker build -f dockerfiles/worker-gpu-debian.Dockerfile \
#     --build-arg ACCEPT_NVIDIA_CUDNN_LICENSE=yes -t ddp-worker-gpu-debian:0.1.0 .
# cuDNN: Debian's libtorch-cuda-2.6 depends on `nvidia-cudnn`, whose installation downloads
# cuDNN 9 from NVIDIA's site under NVIDIA's cuDNN license. The build needs that site and your
# acceptance of the license (ACCEPT_NVIDIA_CUDNN_LICENSE=yes); without either it stops there.
# The driver's libcuda.so.1 comes from the host at run time (the NVIDIA container toolkit
# mounts it), so the image installs a stand-in for Debian's libcuda1 instead of a second driver
# library. Needs a driver >= 550 (CUDA 12.4); docs/install.md says which GPUs this image serves.
# Size class: several GB. The runtime stage's apt step downloads 2.4 GB and installs 6.8 GB before
# cuDNN (measured, Debian 13.8): nvidia-cudnn depends on nvidia-cuda-dev, whose 2.6 GB of static
# CUDA libraries this stage tells dpkg to skip (no-static-libs below); cuDNN adds its own.

FROM debian:trixie AS build
ARG ACCEPT_NVIDIA_CUDNN_LICENSE=
COPY dockerfiles/debian-gpu-stand-ins.sh /usr/local/sbin/debian-gpu-stand-ins.sh
RUN sh /usr/local/sbin/debian-gpu-stand-ins.sh "${ACCEPT_NVIDIA_CUDNN_LICENSE}" \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config ca-certificates curl \
      libyaml-cpp-dev prometheus-cpp-dev libgloo-cuda-dev libnccl-dev nvidia-cuda-toolkit \
      /tmp/stand-ins/ddp-host-libcuda.deb libtorch-cuda-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY CMakeLists.txt ./
COPY common/ common/
COPY worker/ worker/
# CMake must report "NCCL found": the GPU communicator is the point of this image.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DDDP_BUILD_OPERATOR=OFF -DDDP_BUILD_BENCH=OFF -DBUILD_TESTING=OFF >configure.log \
 && { grep -q 'ddp-worker: NCCL found' configure.log || { cat configure.log; exit 1; }; } \
 && cmake --build build --target ddp-worker \
 && strip build/worker/ddp-worker

FROM debian:trixie-slim
ARG ACCEPT_NVIDIA_CUDNN_LICENSE=
COPY dockerfiles/debian-gpu-stand-ins.sh /usr/local/sbin/debian-gpu-stand-ins.sh
# Runtime: CUDA LibTorch (with c10d, Gloo and NCCL), yaml-cpp, prometheus-cpp's core, OpenBLAS
# with threads. No static libraries: nothing links here, and nvidia-cuda-dev (which nvidia-cudnn
# needs) carries 2.6 GB of them.
RUN sh /usr/local/sbin/debian-gpu-stand-ins.sh "${ACCEPT_NVIDIA_CUDNN_LICENSE}" \
 && echo 'path-exclude /usr/lib/x86_64-linux-gnu/*.a' >/etc/dpkg/dpkg.cfg.d/no-static-libs \
 && apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      ca-certificates curl /tmp/stand-ins/ddp-host-libcuda.deb \
      libtorch-cuda-2.6 libnccl2 libyaml-cpp0.8 libprometheus-cpp-core1.0 libopenblas0-pthread \
 && rm -rf /var/lib/apt/lists/* /tmp/stand-ins
COPY --from=build /src/build/worker/ddp-worker /usr/local/bin/ddp-worker
# Non-root. Checkpoint volumes need the group 65532: the operator adds fsGroup 65532 to pods of
# this image that set no user or group (docs/writing-a-ddpjob.md).
USER 65532:65532
WORKDIR /tmp
# 9400: /metrics and /healthz (when DDP_METRICS_PORT is set); 29500: rendezvous on rank 0.
EXPOSE 9400 29500
# The release: CMakeLists.txt's project(VERSION), passed by scripts/build-images.sh; the
# default is the same (tests/delivery/version_test.py). `ddp-worker --version` says it too.
ARG DDP_VERSION=0.1.0
LABEL org.opencontainers.image.title="ddp-worker-gpu-debian" \
      org.opencontainers.image.version="${DDP_VERSION}"
ENTRYPOINT ["ddp-worker"]
