#!/usr/bin/python3
"""The independent reference for ddp-worker's TorchScript models (tests/worker/torchscript_e2e_test.cc).

  torchscript_reference.py export OUT --vocab 64 --block 8 [--returns loss|logits]
      scripts a small next-token model whose forward(idx, targets) returns the loss (or logits)
      and saves it with torch.jit.save.
  torchscript_reference.py ddp --model M --data SHARD --block 8 --batch 4 --steps 20 --lr 0.01
      trains M with PyTorch's own DistributedDataParallel on 2 Gloo ranks it spawns, on the raw
      uint16 shard SHARD cut as ddp-worker cuts it (window k = tokens[k*T, k*T + T + 1)), with
      AdamW (betas 0.9/0.95, no weight decay) at a constant learning rate, and prints
      `step S loss L` (the loss averaged over ranks) per step.
The shard must hold exactly batch x 2 windows: every step then sees the whole set, so the loss
curve does not depend on which rank gets which window (the samplers need not agree).
"""
import argparse
import os
import socket
import struct
import subprocess
import sys

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F

# Debian 13's torch 2.6 is built without libuv and init_process_group(env://) asks for it
# unless USE_LIBUV=0; the classic TCPStore server is in every torch (docs/torchrun.md).
os.environ.setdefault("USE_LIBUV", "0")


class TinyLm(nn.Module):
    def __init__(self, vocab: int, block: int, n_embd: int, returns_loss: bool):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(block, n_embd)
        self.fc = nn.Linear(n_embd, 4 * n_embd)
        self.ln = nn.LayerNorm(4 * n_embd)
        self.head = nn.Linear(4 * n_embd, vocab)
        self.returns_loss = returns_loss

    def forward(self, idx: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        t = idx.size(1)
        h = self.wte(idx) + self.wpe(torch.arange(t, device=idx.device))
        logits = self.head(self.ln(torch.tanh(self.fc(h))))
        if self.returns_loss:
            return F.cross_entropy(logits.view(-1, logits.size(-1)), targets.reshape(-1))
        return logits


def export(a):
    torch.manual_seed(a.seed)
    m = torch.jit.script(TinyLm(a.vocab, a.block, a.n_embd, a.returns == "loss"))
    torch.jit.save(m, a.out)


def windows(path, block):
    raw = open(path, "rb").read()
    tokens = struct.unpack("<%dH" % (len(raw) // 2), raw)
    n = (len(tokens) - 1) // block
    return [tokens[k * block:k * block + block + 1] for k in range(n)]


def rank_main(a):
    rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    w = windows(a.data, a.block)
    assert len(w) == a.batch * world, "the shard must hold batch x world windows"
    mine = torch.tensor(w[rank * a.batch:(rank + 1) * a.batch], dtype=torch.long)
    x, y = mine[:, :-1], mine[:, 1:]
    model = torch.jit.load(a.model)
    model.train()
    ddp = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.95), weight_decay=0.0)
    for step in range(a.steps):
        out = ddp(x, y)
        loss = out if out.dim() == 0 else F.cross_entropy(out.reshape(-1, out.size(-1)), y.reshape(-1))
        opt.zero_grad()
        loss.backward()
        opt.step()
        mean = loss.detach().clone()
        dist.all_reduce(mean)
        if rank == 0:
            print("step %d loss %.6f" % (step + 1, mean.item() / world), flush=True)
    dist.destroy_process_group()


def ddp(a):
    if "RANK" in os.environ:
        return rank_main(a)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port), GLOO_SOCKET_IFNAME="lo")
        procs.append(subprocess.Popen([sys.executable] + sys.argv, env=env))
    sys.exit(max(p.wait() for p in procs))


def main():
    p = argparse.ArgumentParser()
    sub = p.add_subparsers(dest="cmd", required=True)
    e = sub.add_parser("export")
    e.add_argument("out")
    e.add_argument("--vocab", type=int, default=64)
    e.add_argument("--block", type=int, default=8)
    e.add_argument("--n-embd", type=int, default=16)
    e.add_argument("--seed", type=int, default=3)
    e.add_argument("--returns", choices=["loss", "logits"], default="loss")
    d = sub.add_parser("ddp")
    d.add_argument("--model", required=True)
    d.add_argument("--data", required=True)
    d.add_argument("--block", type=int, default=8)
    d.add_argument("--batch", type=int, default=4)
    d.add_argument("--steps", type=int, default=20)
    d.add_argument("--lr", type=float, default=0.01)
    a = p.parse_args()
    export(a) if a.cmd == "export" else ddp(a)


if __name__ == "__main__":
    main()
