#!/usr/bin/python3
"""The peer for ddp-worker's benchmarks: PyTorch's own DistributedDataParallel on the same minGPT,
data generator, batch, thread count and step count. Spawns its ranks itself (no torchrun needed).

  torch_ddp_bench.py --world-size 2 --steps 40 --threads 1 --batch-size 8 --n-layer 4 ...

Rank 0 prints one line: `torch_ddp samples_per_s=... tokens_per_s=... step_ms=... params=...`,
averaged over the steps after the first --warmup (5), like ddp-worker's summary line; on CUDA also
the peak memory PyTorch's allocator held. --tie-embeddings 1 is GPT-2's layout (the head is wte);
--compile 1 runs the DDP model through torch.compile; --log-every N reads the loss on the host
every N steps (1: every step, a host sync per step).
"""
import argparse
import contextlib
import math
import os
import socket
import subprocess
import sys
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# Debian 13's torch 2.6 is built without libuv and init_process_group(env://) asks for it
# unless USE_LIBUV=0; the classic TCPStore server is in every torch (docs/torchrun.md).
os.environ.setdefault("USE_LIBUV", "0")


class Block(nn.Module):
    # Same layout and parameter order as worker/model/mingpt.cc.
    def __init__(self, c, h):
        super().__init__()
        self.h = h
        self.ln1 = nn.LayerNorm(c)
        self.qkv = nn.Linear(c, 3 * c)
        self.proj = nn.Linear(c, c)
        self.ln2 = nn.LayerNorm(c)
        self.fc = nn.Linear(c, 4 * c)
        self.fc_proj = nn.Linear(4 * c, c)

    def attn(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.h, c // self.h).transpose(1, 2) for z in (q, k, v))
        if hasattr(F, "scaled_dot_product_attention"):
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(c // self.h))
            mask = torch.ones(t, t, dtype=torch.bool, device=x.device).triu(1)
            y = att.masked_fill(mask, float("-inf")).softmax(-1) @ v
        return self.proj(y.transpose(1, 2).contiguous().view(b, t, c))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.fc_proj(F.gelu(self.fc(self.ln2(x))))


class MinGpt(nn.Module):
    def __init__(self, vocab, block, n_layer, n_head, n_embd, tie=False):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.blocks = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.head = nn.Linear(n_embd, vocab, bias=False)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, 0.0, 0.02)
            if isinstance(m, nn.Linear) and m.bias is not None:
                nn.init.zeros_(m.bias)
        if tie:
            self.head.weight = self.wte.weight

    def forward(self, idx, targets):
        t = idx.shape[1]
        h = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        for b in self.blocks:
            h = b(h)
        logits = self.head(self.ln_f(h))
        return F.cross_entropy(logits.view(-1, logits.size(-1)).float(), targets.reshape(-1))


MASK = (1 << 64) - 1


def splitmix(seed):
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        yield z ^ (z >> 31)


def synthetic_tokens(n, vocab, seed):
    """worker/data/dataset.cc's MakeSyntheticStream, token for token."""
    rng, out, mod = splitmix(seed), [], vocab - 1
    while len(out) < n:
        start, stride, length = next(rng) % mod, 1 + next(rng) % 7, 8 + next(rng) % 9
        out.extend(1 + (start + i * stride) % mod for i in range(length))
        out.append(0)
    return torch.tensor(out[:n], dtype=torch.long)


def worker(a):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(a.threads)
    device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", rank))) if a.device == "cuda" else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    dist.init_process_group("nccl" if device.type == "cuda" else "gloo", rank=rank, world_size=world)
    torch.manual_seed(a.seed)
    model = MinGpt(a.vocab, a.block_size, a.n_layer, a.n_head, a.n_embd, bool(a.tie_embeddings)).to(device)
    ddp = nn.parallel.DistributedDataParallel(model, bucket_cap_mb=a.bucket_cap_mb)
    if a.compile:
        ddp = torch.compile(ddp)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95))
    data = synthetic_tokens(a.tokens, a.vocab, 1234)
    gen = torch.Generator().manual_seed(a.seed + rank)
    sync = torch.cuda.synchronize if device.type == "cuda" else (lambda: None)
    warmup = min(a.warmup, a.steps - 1)
    lv = float("nan")
    for step in range(a.steps):
        if step == warmup:
            sync()
            t0 = time.perf_counter()
        ix = torch.randint(len(data) - a.block_size - 1, (a.batch_size,), generator=gen)
        x = torch.stack([data[i:i + a.block_size] for i in ix]).to(device)
        y = torch.stack([data[i + 1:i + 1 + a.block_size] for i in ix]).to(device)
        ctx = (torch.autocast(device_type="cuda", dtype=torch.bfloat16) if device.type == "cuda"
               else contextlib.nullcontext())
        with ctx:
            loss = ddp(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=False)
        if (step + 1) % a.log_every == 0 or step + 1 == a.steps:
            lv = loss.item()  # a host sync
    sync()
    step = (time.perf_counter() - t0) / (a.steps - warmup)
    if rank == 0:
        gsamples = a.batch_size * world
        params = sum(p.numel() for p in model.parameters())
        mem = (f" peak_alloc_gib={torch.cuda.max_memory_allocated() / 2**30:.2f}"
               f" peak_reserved_gib={torch.cuda.max_memory_reserved() / 2**30:.2f}") if device.type == "cuda" else ""
        print(f"torch_ddp samples_per_s={gsamples / step:.2f} tokens_per_s={gsamples * a.block_size / step:.1f} "
              f"step_ms={step * 1e3:.2f} params={params} loss={lv:.4f} compile={a.compile}{mem} "
              f"torch={torch.__version__}", flush=True)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser()
    for name, default in [("world-size", 2), ("steps", 40), ("threads", 1), ("batch-size", 8), ("n-layer", 4),
                          ("n-head", 4), ("n-embd", 128), ("block-size", 64), ("vocab", 32), ("tokens", 200000),
                          ("seed", 42), ("tie-embeddings", 0), ("compile", 0), ("log-every", 1),
                          ("warmup", 5)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--bucket-cap-mb", type=float, default=25.0)
    p.add_argument("--device", default="cpu")
    a = p.parse_args()
    if "RANK" in os.environ:
        return worker(a)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(a.world_size):
        env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(a.world_size),
                   MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    sys.exit(max(p.wait() for p in procs))


if __name__ == "__main__":
    main()
