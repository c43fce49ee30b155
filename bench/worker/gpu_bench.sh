#!/usr/bin/env bash
# GPU mode (for a machine with a GPU, e.g. one H200): builds ddp-worker against the CUDA LibTorch
# of the local PyTorch install, then runs minGPT on one GPU with ddp-worker and with Python torch
# eager DDP (NCCL, bf16 autocast, same model/batch/steps), and reports tokens/s and MFU.
#
#   bench/worker/gpu_bench.sh [build-dir]
# Env knobs: PY (python with CUDA torch; default /usr/bin/python3), STEPS (50), BATCH (8),
#   LAYERS (12) HEADS (12) EMBD (768) BLOCK (1024) VOCAB (50304: synthetic vocabulary),
#   PEAK_TFLOPS (989: H200 dense bf16), NPROC (1).
# MFU = tokens/s * (6 N + 12 L T C) / peak (PaLM's estimate, attention included).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$here/../.."
PY=${PY:-/usr/bin/python3}
build="${1:-$root/build-gpu}"
STEPS=${STEPS:-50}; BATCH=${BATCH:-8}; LAYERS=${LAYERS:-12}; HEADS=${HEADS:-12}; EMBD=${EMBD:-768}
BLOCK=${BLOCK:-1024}; VOCAB=${VOCAB:-50304}; PEAK_TFLOPS=${PEAK_TFLOPS:-989}; NPROC=${NPROC:-1}

prefix=$("$PY" -c 'import torch; print(torch.utils.cmake_prefix_path)')
cmake -S "$root" -B "$build" -G Ninja -DDDP_BUILD_OPERATOR=OFF -DBUILD_TESTING=OFF \
  -DCMAKE_PREFIX_PATH="$prefix" >/dev/null
cmake --build "$build" --target ddp-worker -j"$(nproc)" >/dev/null
bin="$build/worker/ddp-worker"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
port=$("$PY" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')

for r in $(seq 0 $((NPROC - 1))); do
  MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=$NPROC RANK=$r LOCAL_RANK=$r \
    "$bin" --device cuda --bf16 true --model mingpt --n-layer "$LAYERS" --n-head "$HEADS" \
    --n-embd "$EMBD" --block-size "$BLOCK" --batch-size "$BATCH" --steps "$STEPS" \
    --synthetic-vocab "$VOCAB" --synthetic-tokens 2000000 --log-every 10 \
    >"$tmp/w$r.out" 2>"$tmp/w$r.err" &
done
wait
w=$(grep '^summary' "$tmp/w0.out") || { cat "$tmp/w0.err"; exit 1; }
params=$(sed -n 's/.* params=\([0-9]*\).*/\1/p' "$tmp/w0.err" | head -1)
p=$("$PY" "$here/torch_ddp_bench.py" --device cuda --world-size "$NPROC" --steps "$STEPS" \
     --batch-size "$BATCH" --n-layer "$LAYERS" --n-head "$HEADS" --n-embd "$EMBD" \
     --block-size "$BLOCK" --vocab "$VOCAB" --tokens 2000000 --threads 4)
field() { sed -n "s/.* $1=\([^ ]*\).*/\1/p" <<<" $2"; }
flops=$(awk "BEGIN{print 6*$params + 12*$LAYERS*$BLOCK*$EMBD}")
mfu() { awk "BEGIN{printf \"%.1f%%\", 100*$1*$flops/($PEAK_TFLOPS*1e12*$NPROC)}"; }
wt=$(field tokens_per_s "$w"); pt=$(field tokens_per_s "$p")
echo "# $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1), minGPT L=$LAYERS H=$HEADS C=$EMBD T=$BLOCK V=$VOCAB params=$params, batch $BATCH, bf16, $STEPS steps"
echo "| | tokens/s | MFU |"
echo "|---|---|---|"
echo "| ddp-worker (C++) | $wt | $(mfu "$wt") |"
echo "| torch eager DDP (Python) | $pt | $(mfu "$pt") |"
echo "| ratio | $(awk "BEGIN{printf \"%.2f\", $wt/$pt}") | |"
echo "ddp-worker breakdown: $(grep -o 'step_ms=.*sync_ms=[^ ]*' <<<"$w")"
