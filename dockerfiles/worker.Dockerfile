# ddp-worker: the LibTorch DDP trainer, with NCCL for GPUs (Gloo on CPU).
# Build from the repository root:
#   docker build -f dockerfiles/worker.Dockerfile -t ddp-worker:0.1.0 .
# Match CUDA_VERSION and TORCH_INDEX to each other and to your driver (CUDA 12.6 needs a driver
# >= 560, or >= 525 with CUDA forward compatibility).
ARG CUDA_VERSION=12.6.3
ARG TORCH_VERSION=2.7.1
ARG TORCH_INDEX=https://download.pytorch.org/whl/cu126

FROM nvidia/cuda:${CUDA_VERSION}-cudnn-devel-ubuntu22.04 AS build
ARG TORCH_VERSION
ARG TORCH_INDEX
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config python3 python3-pip libyaml-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
# LibTorch for CUDA comes from the PyTorch wheel (its CMake package and shared libraries).
# Wheels from 2.7 on use the C++11 string ABI, like the distribution's yaml-cpp.
RUN pip3 install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
# c10d/ProcessGroupGloo.hpp includes Gloo's own headers; take the distribution's when the wheel
# does not ship them.
RUN python3 -c "import os, torch; d = os.path.dirname(torch.__file__); raise SystemExit(0 if os.path.isdir(os.path.join(d, 'include', 'gloo')) else 1)" \
 || (apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends libgloo-dev \
     && rm -rf /var/lib/apt/lists/*)
# prometheus-cpp's core library (metric families and their exposition, common/prometheus.cc):
# Ubuntu 22.04 does not package it (Debian 12 and Ubuntu 24.04 do), so it is built here from the
# release Debian 12 ships, static, without its HTTP pull and push parts.
ARG PROMETHEUS_CPP_VERSION=1.0.1
RUN python3 -c "import urllib.request as u; u.urlretrieve('https://github.com/jupp0r/prometheus-cpp/archive/refs/tags/v${PROMETHEUS_CPP_VERSION}.tar.gz', '/tmp/prometheus-cpp.tar.gz')" \
 && mkdir /tmp/prometheus-cpp \
 && tar -xzf /tmp/prometheus-cpp.tar.gz -C /tmp/prometheus-cpp --strip-components=1 \
 && cmake -S /tmp/prometheus-cpp -B /tmp/prometheus-cpp/build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DBUILD_SHARED_LIBS=OFF -DCMAKE_POSITION_INDEPENDENT_CODE=ON -DENABLE_PULL=OFF \
      -DENABLE_PUSH=OFF -DENABLE_COMPRESSION=OFF -DENABLE_TESTING=OFF \
      -DUSE_THIRDPARTY_LIBRARIES=OFF \
 && cmake --build /tmp/prometheus-cpp/build \
 && cmake --install /tmp/prometheus-cpp/build \
 && rm -rf /tmp/prometheus-cpp /tmp/prometheus-cpp.tar.gz
WORKDIR /src
COPY CMakeLists.txt ./
COPY common/ common/
COPY worker/ worker/
# NCCL (nccl.h, libnccl.so) comes from the CUDA devel image; CMake reports "NCCL found".
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DDDP_BUILD_OPERATOR=OFF -DDDP_BUILD_BENCH=OFF -DBUILD_TESTING=OFF \
      -DCMAKE_PREFIX_PATH="$(python3 -c 'import torch; print(torch.utils.cmake_prefix_path)')" \
 && cmake --build build --target ddp-worker

FROM nvidia/cuda:${CUDA_VERSION}-cudnn-runtime-ubuntu22.04
ARG TORCH_VERSION
ARG TORCH_INDEX
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      python3 python3-pip libyaml-cpp0.7 ca-certificates \
 && rm -rf /var/lib/apt/lists/*
# The same wheel as the build stage: ddp-worker's RUNPATH points into its torch/lib, and the
# wheel brings the CUDA libraries LibTorch was built against. libnccl.so.2 is the image's.
RUN pip3 install --no-cache-dir "torch==${TORCH_VERSION}" --index-url "${TORCH_INDEX}"
COPY --from=build /src/build/worker/ddp-worker /usr/local/bin/ddp-worker
# Non-root. Checkpoint volumes need the group 65532: the operator adds fsGroup 65532 to pods of
# this image that set no user or group (docs/writing-a-ddpjob.md); examples/mingpt-kind.yaml sets it.
USER 65532:65532
WORKDIR /tmp
# 9400: /metrics and /healthz (when DDP_METRICS_PORT is set); 29500: rendezvous on rank 0.
EXPOSE 9400 29500
# The release: CMakeLists.txt's project(VERSION), passed by scripts/build-images.sh; the
# default is the same (tests/delivery/version_test.py). `ddp-worker --version` says it too.
ARG DDP_VERSION=0.1.0
LABEL org.opencontainers.image.title="ddp-worker" \
      org.opencontainers.image.version="${DDP_VERSION}"
ENTRYPOINT ["ddp-worker"]
