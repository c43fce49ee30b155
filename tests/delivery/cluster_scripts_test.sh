#!/usr/bin/env bash
# The real-cluster suite's scripts (tests/cluster/run.sh and the files it sources into one shell)
# without a cluster: each parses, and no function is defined in two of them. A second definition
# silently replaces the first (the gang scenarios' inplace_hook once replaced the quickstart
# scenario's, and the kit's `inplace` case failed four checks with nothing else wrong).
# Usage: cluster_scripts_test.sh SOURCE_DIR
set -uo pipefail
root=${1:?usage: cluster_scripts_test.sh SOURCE_DIR}
run=$root/tests/cluster/run.sh
status=0

mapfile -t sourced < <(sed -n 's|^\. "\$ROOT/\(tests/cluster/[A-Za-z0-9_]*\.sh\)"$|\1|p' "$run")
if [ "${#sourced[@]}" -lt 2 ]; then
  echo "FAIL: found ${#sourced[@]} sourced scripts in $run (expected the lines '. \"\$ROOT/tests/cluster/NAME.sh\"')"
  exit 1
fi

for f in tests/cluster/run.sh "${sourced[@]}"; do
  if ! out=$(bash -n "$root/$f" 2>&1); then
    echo "FAIL: $f does not parse: $out"
    status=1
  fi
done

# Function definitions as these scripts write them: NAME() { at the start of a line.
dups=$(for f in "${sourced[@]}"; do
         sed -n "s|^\([A-Za-z_][A-Za-z0-9_]*\)() *{.*|\1 $f|p" "$root/$f"
       done | sort | awk '{files[$1] = files[$1] " " $2; n[$1]++} END {for (k in n) if (n[k] > 1) print k ":" files[k]}')
if [ -n "$dups" ]; then
  echo "FAIL: functions defined more than once in the scripts run.sh sources (the last one wins):"
  echo "$dups"
  status=1
fi

[ "$status" = 0 ] && echo "ok: ${#sourced[@]} sourced scripts parse and define each function once"
exit "$status"
