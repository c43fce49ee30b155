# ddp-worker for CPU: the same trainer as worker.Dockerfile, built against Debian's LibTorch
# (the builds the tests run against), Gloo for the all-reduce. No GPU, no CUDA, no PyTorch wheel.
# Build from the repository root:
#   docker build -f dockerfiles/worker-cpu.Dockerfile -t ddp-worker-cpu:0.1.0 .
#   docker build --build-arg DEBIAN=bookworm -f dockerfiles/worker-cpu.Dockerfile ...   (1.13)
# DEBIAN picks the release and with it the LibTorch: trixie (Debian 13, LibTorch 2.6, the
# default) or bookworm (Debian 12, LibTorch 1.13). Both run the kit's e2e suite (bench/RESULTS.md).
# A build stage with Debian's -dev packages and a compiler, then only the shared libraries the
# binary links against, on the release's -slim image, as a non-root user. A DEBIAN other than
# these two stops at the runtime stage's package list. Size class: about 1 GB
# uncompressed: LibTorch itself is about 130-200 MB; most of the rest is what Debian's libtorch
# depends on and the binary loads (OpenCV, Mesa and LLVM, FFmpeg, oneDNN, OpenBLAS). The CUDA
# image is several GB.
ARG DEBIAN=trixie

FROM debian:${DEBIAN} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config \
      libtorch-dev libgloo-dev libyaml-cpp-dev prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the worker build reads; .dockerignore keeps build outputs out of the context.
COPY CMakeLists.txt ./
COPY common/ common/
COPY worker/ worker/
# No CUDA toolkit here, so CMake reports "NCCL not found" and builds the Gloo-only worker.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DDDP_BUILD_OPERATOR=OFF -DDDP_BUILD_BENCH=OFF -DBUILD_TESTING=OFF \
 && cmake --build build --target ddp-worker \
 && strip build/worker/ddp-worker

FROM debian:${DEBIAN}-slim
# Runtime libraries of ddp-worker, named by release: LibTorch (with c10d and Gloo), yaml-cpp
# (config files), prometheus-cpp's core (its metrics), and OpenBLAS with threads: without it
# LibTorch's BLAS is the reference one, about 15x slower. Another release stops here.
RUN . /etc/os-release \
 && apt-get update \
 && case "$VERSION_CODENAME" in \
      bookworm) DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
                  libtorch1.13 libyaml-cpp0.7 libopenblas0-pthread libprometheus-cpp-core1.0 ;; \
      trixie) DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
                libtorch2.6 libyaml-cpp0.8 libopenblas0-pthread libprometheus-cpp-core1.0 ;; \
      *) echo "worker-cpu.Dockerfile: no runtime packages named for Debian $VERSION_CODENAME" >&2; exit 1 ;; \
    esac \
 && rm -rf /var/lib/apt/lists/*
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
LABEL org.opencontainers.image.title="ddp-worker-cpu" \
      org.opencontainers.image.version="${DDP_VERSION}"
ENTRYPOINT ["ddp-worker"]
