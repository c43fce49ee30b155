#!/usr/bin/env bash
# Token shards against the synthetic in-memory stream, side by side in one run: the same minGPT,
# vocabulary, batch and steps on 2 Gloo ranks; the data's share of the step (data_ms / step_ms)
# for each, and the time from process start to the end of the first step on a 1 GiB shard set.
#
#   bench/worker/shards_bench.sh [path/to/ddp-worker]
# Env knobs: GIB (1: size of the shard set) FILES (4) STEPS (30) BATCH (8) BLOCK (256) EMBD (128)
#            LAYERS (2) THREADS (1)
# The shards are raw uint16 with random tokens below 256 (a vocabulary of 256 keeps the model's
# head small, so the step is not all logits), written once into a temp dir; the page cache is
# not dropped (that would disturb the machine), so "first step" is warm-cache.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
bin="${1:-$here/../../build/worker/ddp-worker}"
GIB=${GIB:-1}; FILES=${FILES:-4}; STEPS=${STEPS:-30}; BATCH=${BATCH:-8}; BLOCK=${BLOCK:-256}
EMBD=${EMBD:-128}; LAYERS=${LAYERS:-2}; THREADS=${THREADS:-1}
[[ -x "$bin" ]] || { echo "ddp-worker not found at $bin (pass its path)"; exit 2; }
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
per_file_mib=$(( GIB * 1024 / FILES ))
for i in $(seq 0 $((FILES - 1))); do
  /usr/bin/python3 -c '
import os, sys
n = int(sys.argv[1]) << 19          # tokens in sys.argv[1] MiB of uint16
buf = bytearray(2 * n)
buf[0::2] = os.urandom(n)           # low byte random, high byte 0: tokens < 256
open(sys.argv[2], "wb").write(buf)' "$per_file_mib" "$tmp/train_$i.bin"
done

# run <ranks> <extra flags...>: rank 0's summary line; sets $secs to rank 0's wall time.
run() {
  local n=$1; shift
  local port; port=$(free_port)
  local common=(--model mingpt --n-layer "$LAYERS" --n-head 4 --n-embd "$EMBD" --block-size "$BLOCK"
                --batch-size "$BATCH" --threads "$THREADS" --device cpu --log-every 1000 "$@")
  local t0; t0=$(date +%s.%N)
  for r in $(seq $((n - 1)) -1 0); do
    MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=$n RANK=$r \
      "$bin" "${common[@]}" >"$tmp/w$r.out" 2>"$tmp/w$r.err" &
  done
  wait
  secs=$(echo "$(date +%s.%N) - $t0" | bc)
  grep '^summary' "$tmp/w0.out" || { cat "$tmp/w0.err" >&2; exit 1; }
}
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<"$2"; }

echo "# config: minGPT L=$LAYERS C=$EMBD T=$BLOCK vocab 256, batch $BATCH/rank, 2 ranks, $THREADS thread(s)/rank, $STEPS steps, nproc=$(nproc)"
echo "# shards: $FILES files, $GIB GiB, $(( GIB * 512 ))Mi tokens; $(date -u +%FT%TZ)"
syn=$(run 2 --steps "$STEPS" --dataset synthetic --synthetic-vocab 256 --synthetic-tokens 2000000)
sh=$(run 2 --steps "$STEPS" --dataset shards --data-files "$tmp/train_*.bin" --vocab-size 256)
for name in synthetic shards; do
  line=$([[ $name == synthetic ]] && echo "$syn" || echo "$sh")
  d=$(field data_ms "$line"); s=$(field step_ms "$line")
  printf '%-9s step_ms=%s data_ms=%s data_share=%.4f%% tokens_per_s=%s\n' "$name" "$s" "$d" \
    "$(echo "100 * $d / $s" | bc -l)" "$(field tokens_per_s "$line")"
done
printf 'ratio shards/synthetic tokens_per_s=%.3f\n' \
  "$(echo "$(field tokens_per_s "$sh") / $(field tokens_per_s "$syn")" | bc -l)"
# Start to the end of step 1 (process start, shard mapping, sampler, model, rendezvous, 1 step,
# exit): an upper bound of "first step", beside the same for the synthetic stream.
run 1 --steps 1 --dataset synthetic --synthetic-vocab 256 --synthetic-tokens 2000000 >/dev/null
syn_secs=$secs
run 1 --steps 1 --dataset shards --data-files "$tmp/train_*.bin" --vocab-size 256 >/dev/null
printf 'first_step_seconds shards=%.2f synthetic=%.2f (1 rank, %s GiB shard set, start to exit)\n' \
  "$secs" "$syn_secs" "$GIB"
