#!/usr/bin/python3
"""The torchrun peer of resilience_bench.py: plain PyTorch DDP on the minGPT of
bench/worker/torch_ddp_bench.py (same layout, data generator, optimizer), checkpointing the way
PyTorch's DDP tutorial does, run under torchrun which restarts every worker on any failure.

    python3 -m torch.distributed.run --standalone --nproc_per_node 2 --max_restarts 100 \
        torch_train.py --steps 2000 --checkpoint-every 100 --snapshot DIR/snapshot.pt

- Rank 0 saves {model, optimizer, step} every --checkpoint-every steps, atomically (tmp + rename).
- Every rank loads the snapshot at start when there is one (a restarted group resumes there).
- The batch of (step, rank) is a pure function of them, so a resumed run replays the same data.
- Rank 0 prints `step N t=<unix time>` after every step (the bench's progress clock) and every
  rank prints `final rank=R step=N param_checksum=<sha256 prefix of all parameters>` at the end.
- --start-delay-file F (spares_bench.py): lines `RANK UNIX_TIME`; a worker of that rank starting
  before that time waits until then, as the replacement of a lost pod starts late on a cluster
  (the other workers wait for it in init_process_group).
"""
import argparse
import hashlib
import os
import sys
import time


def wait_start(path, rank):
    """Before torch is imported: a container that starts late imports it late too."""
    try:
        with open(path) as f:
            until = max([float(t) for r, t in (line.split() for line in f if line.strip()) if int(r) == rank],
                        default=0.0)
    except OSError:
        return
    late = until - time.time()
    if late > 0:
        print(f"rank {rank}: starting {late:.1f}s late (emulated pod start)", flush=True)
        time.sleep(late)


if "--start-delay-file" in sys.argv[:-1]:
    wait_start(sys.argv[sys.argv.index("--start-delay-file") + 1], int(os.environ.get("RANK", "0")))

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel as DDP  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "worker"))
from torch_ddp_bench import MinGpt, synthetic_tokens  # noqa: E402  (same model as the C++ side)

# Debian 13's torch 2.6 is built without libuv and init_process_group(env://) asks for it
# unless USE_LIBUV=0; the classic TCPStore server is in every torch (docs/torchrun.md).
os.environ.setdefault("USE_LIBUV", "0")


def save(path, model, opt, step):
    tmp = path + ".tmp"
    torch.save({"model": model.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
    os.replace(tmp, path)


def checksum(model):
    h = hashlib.sha256()
    for p in model.parameters():
        h.update(p.detach().contiguous().numpy().tobytes())
    return h.hexdigest()[:16]


def main():
    p = argparse.ArgumentParser()
    for name, default in [("steps", 300), ("checkpoint-every", 100), ("threads", 1), ("batch-size", 16),
                          ("n-layer", 4), ("n-head", 4), ("n-embd", 128), ("block-size", 64), ("vocab", 32),
                          ("tokens", 200000), ("seed", 42)]:
        p.add_argument("--" + name, type=int, default=default)
    p.add_argument("--snapshot", required=True)
    p.add_argument("--start-delay-file", default="", help="read before torch is imported (see the header)")
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    dist.init_process_group("gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(a.seed)
    model = MinGpt(a.vocab, a.block_size, a.n_layer, a.n_head, a.n_embd)
    decay = [q for q in model.parameters() if q.dim() >= 2]
    no_decay = [q for q in model.parameters() if q.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-3, betas=(0.9, 0.95))
    step = 0
    if os.path.exists(a.snapshot):
        snap = torch.load(a.snapshot, map_location="cpu")
        model.load_state_dict(snap["model"])
        opt.load_state_dict(snap["optimizer"])
        step = snap["step"]
        print(f"rank {rank}: resumed from snapshot step {step}", flush=True)
    ddp = DDP(model)
    data = synthetic_tokens(a.tokens, a.vocab, 1234)
    while step < a.steps:
        gen = torch.Generator().manual_seed(a.seed * 1000003 + step * world + rank)
        ix = torch.randint(len(data) - a.block_size - 1, (a.batch_size,), generator=gen)
        x = torch.stack([data[i:i + a.block_size] for i in ix])
        y = torch.stack([data[i + 1:i + 1 + a.block_size] for i in ix])
        loss = ddp(x, y)
        opt.zero_grad(set_to_none=False)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        lv = loss.item()
        step += 1
        if rank == 0:
            print(f"step {step} t={time.time():.3f} loss {lv:.4f}", flush=True)
            if step % a.checkpoint_every == 0 or step == a.steps:
                save(a.snapshot, model, opt, step)
    dist.barrier()
    print(f"final rank={rank} step={step} param_checksum={checksum(model)}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
