#!/usr/bin/env bash
# Installs what building and testing need, from Debian's archive (and npm for the Dockerfile
# linter). Idempotent: does nothing when everything is present. Root runs apt-get directly;
# anyone else goes through sudo.
set -euo pipefail

# `install-deps.sh --fuzz` (from `make fuzz`) adds clang and its libFuzzer/sanitizer runtimes,
# which nothing else needs: `make test` replays the fuzz corpora with the ordinary compiler.
# `install-deps.sh --build` (from `make demo`) installs only what the build needs: no test tools,
# no npm (a machine without the npm registry can still run the demo).
# `install-deps.sh --torch-suite` (scripts/test-other-release.sh, in the other release's root)
# installs what the build and the worker's suite need: the test tools without npm.
# Debian 12 (bookworm: LibTorch 1.13, clang 14) and Debian 13 (trixie: LibTorch 2.6, clang 19)
# use the same package names but for clang's runtimes.
. /etc/os-release
case "${VERSION_CODENAME:-}" in
  bookworm) CLANG_RT=libclang-rt-14-dev ;;
  trixie) CLANG_RT=libclang-rt-19-dev ;;
  *) echo "install-deps: ${PRETTY_NAME:-this system} is neither Debian 12 nor Debian 13;" \
       "trying Debian 13's package names" >&2
     CLANG_RT=libclang-rt-dev ;;
esac
FUZZ_PACKAGES=(clang "$CLANG_RT")

BUILD_PACKAGES=(
  cmake ninja-build g++ make pkg-config
  libtorch-dev            # LibTorch (CPU) with c10d TCPStore and ProcessGroupGloo
  libgloo-dev             # headers that c10d/ProcessGroupGloo.hpp includes
  libopenblas0-pthread    # without it LibTorch uses reference BLAS and trains ~15x slower
  libcpprest-dev libssl-dev libyaml-cpp-dev nlohmann-json3-dev
  libjemalloc-dev         # the operator's allocator (see operator/CMakeLists.txt)
  prometheus-cpp-dev      # metric families and their text exposition, both binaries (common/)
  libgtest-dev            # the build builds the tests too
)
TEST_PACKAGES=(
  prometheus              # promtool, to validate our /metrics exposition in tests
  python3-torch           # the Python DDP peer (benchmarks, TorchScript and torchrun tests)
  python3-yaml            # bench/operator/kit_scale.py reads the chart's CRD
  nodejs npm              # dockerfile-utils, to lint the Dockerfiles in tests
)

APT_PACKAGES=("${BUILD_PACKAGES[@]}")
case "${1:-}" in
  --build) ;;
  --torch-suite) for p in "${TEST_PACKAGES[@]}"; do
                   [ "$p" = nodejs ] || [ "$p" = npm ] || APT_PACKAGES+=("$p"); done ;;
  --fuzz) APT_PACKAGES+=("${TEST_PACKAGES[@]}" "${FUZZ_PACKAGES[@]}") ;;
  *) APT_PACKAGES+=("${TEST_PACKAGES[@]}") ;;
esac

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi
}

missing=()
for p in "${APT_PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm may come with a nodejs that is not Debian's; then the npm binary is enough.
if command -v npm >/dev/null 2>&1; then
  tmp=(); for p in "${missing[@]}"; do [ "$p" = npm ] || [ "$p" = nodejs ] || tmp+=("$p"); done
  missing=("${tmp[@]+"${tmp[@]}"}")
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "install-deps: installing ${missing[*]}"
  as_root apt-get update -q
  as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
else
  echo "install-deps: all system packages present"
fi

# Node packages used by tests live in tests/delivery (package.json + package-lock.json).
root=$(cd "$(dirname "$0")/.." && pwd)
if [ "${1:-}" != --build ] && [ "${1:-}" != --torch-suite ] && [ -f "$root/tests/delivery/package.json" ] &&
   [ ! -d "$root/tests/delivery/node_modules" ]; then
  echo "install-deps: npm ci in tests/delivery"
  (cd "$root/tests/delivery" && npm ci --no-audit --no-fund --silent)
fi
