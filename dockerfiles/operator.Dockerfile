# ddp-operator: the Kubernetes operator (`ddp-operator run`), also usable for `validate`.
# Build from the repository root:
#   docker build -f dockerfiles/operator.Dockerfile -t ddp-operator:0.1.0 .
# Two stages: Debian's -dev packages and a compiler to build, then only the shared libraries the
# binary links against, on bookworm-slim, as a non-root user.

FROM debian:bookworm AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      cmake ninja-build g++ pkg-config \
      libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev libjemalloc-dev \
      prometheus-cpp-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# Only what the operator build reads; .dockerignore keeps build outputs out of the context.
COPY CMakeLists.txt ./
COPY common/ common/
COPY operator/ operator/
# The CRD: compiled into the operator (strict field validation against the API server's schema).
COPY crds/ crds/
# The worker (LibTorch), the benchmarks and the tests are not part of this image.
RUN cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release \
      -DDDP_BUILD_WORKER=OFF -DDDP_BUILD_BENCH=OFF -DBUILD_TESTING=OFF \
 && cmake --build build --target ddp-operator \
 && strip build/operator/ddp-operator

FROM debian:bookworm-slim
# Runtime libraries of ddp-operator: cpprestsdk (HTTP client), OpenSSL (TLS to the API
# server), yaml-cpp (manifests), jemalloc (its allocator), prometheus-cpp's core (its metrics),
# and the CA bundle for verifying the API server.
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      libcpprest2.10 libssl3 libyaml-cpp0.7 libjemalloc2 libprometheus-cpp-core1.0 \
      ca-certificates \
 && rm -rf /var/lib/apt/lists/*
COPY --from=build /src/build/operator/ddp-operator /usr/local/bin/ddp-operator
# 65532 is the conventional "nonroot" uid; the chart runs it with a read-only root filesystem.
USER 65532:65532
# 8080: /metrics, 8081: /healthz and /readyz.
EXPOSE 8080 8081
# The release: CMakeLists.txt's project(VERSION), passed by scripts/build-images.sh; the
# default is the same (tests/delivery/version_test.py). `ddp-operator --version` says it too.
ARG DDP_VERSION=0.1.0
LABEL org.opencontainers.image.title="ddp-operator" \
      org.opencontainers.image.version="${DDP_VERSION}"
ENTRYPOINT ["ddp-operator", "run"]
