#!/usr/bin/env bash
# `make test`: the whole suite on this machine's LibTorch, then the worker's suite on the other
# Debian release's (scripts/test-other-release.sh), then one count for each and one in all.
#
#   run-tests.sh BUILD_DIR JOBS [CTEST ARGS...]
#
# Both halves always run; the exit status is non-zero when either failed.
set -uo pipefail
build=$1 jobs=$2; shift 2
here=$(cd "$(dirname "$0")" && pwd)
logs=$(mktemp -d); trap 'rm -rf "$logs"' EXIT

(cd "$build" && ctest --output-on-failure -j "$jobs" "$@") 2>&1 | tee "$logs/host.log"
host_rc=${PIPESTATUS[0]}
JOBS=$jobs bash "$here/test-other-release.sh" "$@" 2>&1 | tee "$logs/other.log"
other_rc=${PIPESTATUS[0]}

# count LOG: "total failed skipped" from ctest's closing lines ("N tests failed out of M" and
# the "(Skipped)" rows of "The following tests did not run").
count() {
  local total failed skipped
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$1" | tail -n 1)
  failed=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$1" | tail -n 1)
  skipped=$(grep -c '(Skipped)' "$1")
  echo "${total:-0} ${failed:-0} ${skipped:-0}"
}
torch_of() { sed -n 's/.*ddp-worker: LibTorch \([0-9.]*\) found.*/\1/p' "$1" | head -n 1; }

read -r h_total h_failed h_skipped < <(count "$logs/host.log")
read -r o_total o_failed o_skipped < <(count "$logs/other.log")
. /etc/os-release
echo
echo "== LibTorch $(torch_of "$build/configure.log") (${PRETTY_NAME}, this machine): $((h_total - h_failed)) of $h_total passed, $h_failed failed, $h_skipped skipped (ctest exit $host_rc)"
echo "== LibTorch $(torch_of "$logs/other.log") (the other Debian release's root, label torch): $((o_total - o_failed)) of $o_total passed, $o_failed failed, $o_skipped skipped (exit $other_rc)"
[ "$o_total" -gt 0 ] || { echo "== the other release's suite ran no test"; other_rc=${other_rc/#0/1}; }
# The failed tests' names again, last, where a log's tail shows them.
failed_names() { sed -n '/The following tests FAILED:/,/^[^[:space:]]/p' "$1" | grep -E '^[[:space:]]+[0-9]+ - '; }
for half in host other; do
  failed_names "$logs/$half.log" | sed "s/^[[:space:]]*/== failed ($half): /"
done
echo "$((h_total - h_failed + o_total - o_failed)) passed, $((h_failed + o_failed)) failed"
[ "$host_rc" -eq 0 ] && [ "$other_rc" -eq 0 ]
