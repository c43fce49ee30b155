#!/usr/bin/env bash
# ddp-worker vs PyTorch's Python DistributedDataParallel, side by side: Gloo, 2 ranks on
# 127.0.0.1, the same minGPT, synthetic data, per-rank batch, thread count and steps.
# Then a bucket-size sweep of ddp-worker with the fraction of all-reduce hidden behind backward,
# and the exposed all-reduce per step with and without the bucket rebuild in arrival order.
#
#   bench/worker/cpu_bench.sh [path/to/ddp-worker]
# Env knobs: STEPS (40) THREADS (1) BATCH (8) LAYERS (4) HEADS (4) EMBD (128) BLOCK (64)
#            REPEATS (2: best of N for each side, to damp the noise of a shared machine)
#            SWEEP ("0.03125 0.125 0.5 25", MiB)
#            PARTS ("compare sweep rebuild": which sections run)
#            REBUILD_CAPS ("0.0625 1", MiB: bucket caps of the rebuild comparison)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../build/worker/ddp-worker}"
PY=/usr/bin/python3   # the interpreter that has torch; never `python3` from PATH
STEPS=${STEPS:-40}; THREADS=${THREADS:-1}; BATCH=${BATCH:-8}; LAYERS=${LAYERS:-4}
HEADS=${HEADS:-4}; EMBD=${EMBD:-128}; BLOCK=${BLOCK:-64}; REPEATS=${REPEATS:-2}
SWEEP=${SWEEP:-"0.03125 0.125 0.5 25"}; PARTS=${PARTS:-"compare sweep rebuild"}
REBUILD_CAPS=${REBUILD_CAPS:-"0.0625 1"}
part() { [[ " $PARTS " == *" $1 "* ]]; }
[[ -x "$bin" ]] || { echo "ddp-worker not found at $bin (pass its path)"; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

free_port() { "$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run_worker <extra flags...>: prints rank 0's summary line.
run_worker() {
  local port; port=$(free_port)
  local common=(--model mingpt --n-layer "$LAYERS" --n-head "$HEADS" --n-embd "$EMBD" --block-size "$BLOCK"
                --batch-size "$BATCH" --steps "$STEPS" --threads "$THREADS" --device cpu --log-every 1000
                --synthetic-tokens 200000 "$@")
  for r in 1 0; do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 RANK=$r \
      "$bin" "${common[@]}" >"$tmp/w$r.out" 2>"$tmp/w$r.err" &
  done
  wait
  grep '^summary' "$tmp/w0.out" || { cat "$tmp/w0.err" >&2; exit 1; }
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }
best() { sort -g | tail -1; }

echo "# config: minGPT L=$LAYERS H=$HEADS C=$EMBD T=$BLOCK, batch $BATCH/rank, 2 ranks, $THREADS thread(s)/rank, $STEPS steps, nproc=$(nproc)"
echo "# $(date -u +%FT%TZ) $("$PY" -c 'import torch; print("torch", torch.__version__)')"
if part compare; then
  w_best=0; p_best=0; w_line=""
  for i in $(seq "$REPEATS"); do
    line=$(run_worker)
    s=$(field samples_per_s "$line")
    if awk "BEGIN{exit !($s > $w_best)}"; then w_best=$s; w_line=$line; fi
    p_line=$("$PY" "$here/torch_ddp_bench.py" --world-size 2 --steps "$STEPS" --threads "$THREADS" \
             --batch-size "$BATCH" --n-layer "$LAYERS" --n-head "$HEADS" --n-embd "$EMBD" --block-size "$BLOCK")
    s=$(field samples_per_s " $p_line")
    if awk "BEGIN{exit !($s > $p_best)}"; then p_best=$s; fi
    echo "repeat $i: ddp-worker $(field samples_per_s "$line") samples/s, torch DDP $s samples/s"
  done
  echo
  echo "| | samples/s (best of $REPEATS) |"
  echo "|---|---|"
  echo "| ddp-worker (C++) | $w_best |"
  echo "| torch DDP (Python) | $p_best |"
  echo "| ratio | $(awk "BEGIN{printf \"%.2f\", $w_best/$p_best}") |"
  echo
  echo "ddp-worker per-step breakdown (ms, mean after warm-up, rank 0):"
  for k in step_ms data_ms forward_ms backward_ms allreduce_ms exposed_allreduce_ms optimizer_ms sync_ms; do
    printf "  %-22s %s\n" "$k" "$(field $k "$w_line")"
  done
fi
if part sweep; then
  echo
  echo "bucket-size sweep (ddp-worker; hidden = 1 - exposed / all-reduce):"
  echo "| bucket cap MiB | samples/s | all-reduce ms | exposed ms | hidden |"
  echo "|---|---|---|---|---|"
  for cap in $SWEEP; do
    line=$(run_worker --bucket-cap-mb "$cap" --first-bucket-cap-mb "$cap")
    ar=$(field allreduce_ms "$line"); ex=$(field exposed_allreduce_ms "$line")
    hid=$(awk "BEGIN{ if ($ar > 0) printf \"%.0f%%\", 100*(1-$ex/$ar); else print \"n/a\" }")
    echo "| $cap | $(field samples_per_s "$line") | $ar | $ex | $hid |"
  done
fi
if part rebuild; then
  # Each repeat runs both settings back to back, so both see the same machine load, and every
  # second repeat runs them in the other order, so neither setting is always the second.
  echo
  echo "bucket rebuild in arrival order (ddp-worker; median of $REPEATS runs each, ms per step):"
  echo "| bucket cap MiB | rebuild | step ms | all-reduce ms | exposed ms | hidden |"
  echo "|---|---|---|---|---|---|"
  median() { sort -g | awk '{v[NR]=$1} END{print (NR%2) ? v[(NR+1)/2] : (v[NR/2]+v[NR/2+1])/2}'; }
  for cap in $REBUILD_CAPS; do
    for mode in true false; do : >"$tmp/rb.$mode"; done
    for i in $(seq "$REPEATS"); do
      order="false true"; (( i % 2 == 0 )) && order="true false"
      for mode in $order; do
        line=$(run_worker --bucket-cap-mb "$cap" --first-bucket-cap-mb "$cap" --rebuild-buckets "$mode")
        echo "$(field step_ms "$line") $(field allreduce_ms "$line") $(field exposed_allreduce_ms "$line")" >>"$tmp/rb.$mode"
      done
    done
    for mode in false true; do
      st=$(cut -d' ' -f1 "$tmp/rb.$mode" | median); ar=$(cut -d' ' -f2 "$tmp/rb.$mode" | median)
      ex=$(cut -d' ' -f3 "$tmp/rb.$mode" | median)
      hid=$(awk "BEGIN{ if ($ar > 0) printf \"%.0f%%\", 100*(1-$ex/$ar); else print \"n/a\" }")
      echo "| $cap | $mode | $st | $ar | $ex | $hid |"
    done
  done
fi
