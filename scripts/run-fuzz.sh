#!/usr/bin/env bash
# Runs every fuzz target of a libFuzzer build (`make fuzz` configures it) for a set time each,
# over its seed corpus in fuzz/corpus/<stem>/ and the crashers kept in fuzz/crashers/<stem>/.
# New interesting inputs go to <build>/fuzz-corpus/<stem>/ (not into the repository); a crash
# is saved as fuzz/crashers/<stem>/crash-<sha1>: commit it with the fix, and `make test`
# replays it from then on.
# Usage: scripts/run-fuzz.sh BUILD_DIR SECONDS_PER_TARGET
set -uo pipefail

build=${1:?build dir}
seconds=${2:-60}
root=$(cd "$(dirname "$0")/.." && pwd)
failed=()
for src in "$root"/fuzz/*_fuzz.cc; do
  target=$(basename "$src" .cc)
  stem=${target%_fuzz}
  bin="$build/fuzz/$target"
  if [ ! -x "$bin" ]; then
    echo "run-fuzz: $bin is missing (build it first)"; failed+=("$stem"); continue
  fi
  work="$build/fuzz-corpus/$stem"
  crashers="$root/fuzz/crashers/$stem"
  mkdir -p "$work" "$crashers"
  echo "run-fuzz: $stem for ${seconds}s"
  # -rss_limit_mb: a target that grows past it is a bug too (its input is kept as a crasher).
  if ! "$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
      -artifact_prefix="$crashers/" "$work" "$root/fuzz/corpus/$stem" "$crashers" \
      > "$build/fuzz-$stem.log" 2>&1; then
    echo "run-fuzz: $stem FAILED; see $build/fuzz-$stem.log and $crashers/"
    failed+=("$stem")
  else
    grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$build/fuzz-$stem.log" |
      sed "s/^/run-fuzz: $stem /"
  fi
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "run-fuzz: failed: ${failed[*]}"
  exit 1
fi
echo "run-fuzz: every target ran ${seconds}s without a crash"
