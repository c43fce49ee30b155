#!/usr/bin/env bash
# The worker's suite (ctest label `torch`: the store, the group, heals, Gloo, shrink, elastic,
# the local jobs with real trainers) against the LibTorch of the Debian release this machine is
# not: Debian 13's 2.6 on a Debian 12 host, Debian 12's 1.13 on a Debian 13 host. It builds in a
# root made by scripts/debian-root.sh (kept between runs under $DDP_ROOTS, made again when
# missing), with this tree mounted at /src and the build in the root's /build.
#
#   test-other-release.sh [CTEST ARGS...]   e.g. -R Gloo to run a part of the suite
#
# Prints the LibTorch it used and ctest's count; exits as ctest does.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)

if [ "${1:-}" = --inside ]; then
  # In the root (a chroot): install, configure, build the suite, run it.
  shift
  jobs=$1 tree=$2; shift 2
  bash /src/scripts/install-deps.sh --torch-suite | grep -v '^install-deps: all system' || true
  apt-get clean  # the root keeps what it installed, not the downloads
  export CCACHE_DIR=/var/cache/ccache CCACHE_MAXSIZE=5G
  # /build serves one tree at a time: ninja trusts modification times, and another checkout's
  # files can be older than objects built from a different one. ccache makes the rebuild cheap.
  if [ "$(cat /build/.ddp-tree 2>/dev/null)" != "$tree" ]; then rm -rf /build; fi
  mkdir -p /build && echo "$tree" >/build/.ddp-tree
  cmake -S /src -B /build -G Ninja -DCMAKE_BUILD_TYPE=Release -DDDP_BUILD_BENCH=OFF \
    -DDDP_BUILD_FUZZ=OFF -DCMAKE_CXX_COMPILER_LAUNCHER=ccache >/build/configure.log 2>&1 ||
    { cat /build/configure.log; exit 1; }
  grep -E '^-- ddp-' /build/configure.log || true
  cmake --build /build -j "$jobs" --target ddp_torch_suite
  cd /build
  exec ctest --output-on-failure --no-tests=error -j "$jobs" -L torch "$@"
fi

. /etc/os-release
case "${VERSION_CODENAME:-}" in
  bookworm) other=trixie ;;
  trixie) other=bookworm ;;
  *) echo "test-other-release: this is ${PRETTY_NAME:-an unknown system}, not Debian 12 or 13:" \
          "no other release to test against" >&2; exit 1 ;;
esac
t0=$SECONDS
echo "== the worker's suite on Debian $other's LibTorch (root: $(bash "$here/debian-root.sh" path "$other"))"
bash "$here/debian-root.sh" ensure "$other" ccache
rc=0
bash "$here/debian-root.sh" run "$other" /bin/bash /src/scripts/test-other-release.sh --inside \
  "${JOBS:-$(nproc)}" "$(cd "$here/.." && pwd)" "$@" || rc=$?
echo "== Debian $other's LibTorch: $((SECONDS - t0)) s, ctest exit $rc"
exit $rc
