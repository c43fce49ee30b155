#!/usr/bin/env bash
# Every `#if TORCH_VERSION...` branch is compiled on both LibTorch versions by `make test`: only
# sources that the worker's suite (ctest label `torch`, built again in the other Debian
# release's root by scripts/test-other-release.sh) compiles may test the version. That root
# has no NCCL, so *_cuda.cc files are compiled on one side only and may not hold such a branch.
# Usage: torch_versions_test.sh SOURCE_DIR
set -uo pipefail
root=${1:?usage: torch_versions_test.sh SOURCE_DIR}
cd "$root" || exit 1
# What the other release's build compiles: worker/ (but *_cuda.cc) and the suite's test folders,
# as tests/CMakeLists.txt names them in DDP_TORCH_SUITE_DIRS.
dirs=$(sed -n 's/^set(DDP_TORCH_SUITE_DIRS \(.*\))$/\1/p' tests/CMakeLists.txt)
[ -n "$dirs" ] || { echo "FAIL: tests/CMakeLists.txt sets no DDP_TORCH_SUITE_DIRS"; exit 1; }
allowed=(worker/); for d in $dirs; do allowed+=("tests/$d/"); done
status=0 checked=0
while IFS= read -r f; do
  checked=$((checked + 1))
  ok=0
  for a in "${allowed[@]}"; do case "$f" in "$a"*) ok=1 ;; esac; done
  case "$f" in *_cuda.cc) ok=0 ;; esac
  if [ $ok -eq 0 ]; then
    echo "FAIL: $f tests TORCH_VERSION but is not compiled against both LibTorch versions" \
         "(only worker/ without *_cuda.cc and tests/{${dirs// /,}}/ are)"
    status=1
  fi
done < <(grep -rlE '^[[:space:]]*#[[:space:]]*(el)?if.*TORCH_VERSION' --include='*.cc' --include='*.h' \
           --include='*.cpp' --include='*.hpp' . | sed 's|^\./||' | grep -v '^third_party/' | grep -v '^build' | sort)
[ $checked -gt 0 ] || { echo "FAIL: found no TORCH_VERSION branch at all (the worker has some: is the search broken?)"; exit 1; }
[ $status -eq 0 ] && echo "ok: $checked files branch on TORCH_VERSION, each compiled against both versions"
exit $status
