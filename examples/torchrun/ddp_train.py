"""A plain PyTorch DDP program, run by torchrun: nothing in it knows about DDPJob.

It follows the snapshot pattern of PyTorch's own DDP tutorial: rank 0 saves a snapshot (model,
optimizer, step) every --save-every steps, and at start every rank loads the snapshot if one
exists. Under a DDPJob the snapshot lives in $DDP_CHECKPOINT_DIR (spec.checkpoint.path), so a
restarted group continues where the last snapshot left off.

    python3 -m torch.distributed.run --nproc_per_node 2 ddp_train.py --steps 300

torchrun sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and MASTER_PORT for this process; the
operator gives torchrun its own arguments as PET_* variables (docs/torchrun.md).
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP


def batch(step, rank, world, size, w_true):
    # The batch is a function of (step, rank) alone, so a resumed run sees the same data.
    g = torch.Generator().manual_seed(step * world + rank)
    x = torch.randn(size, 16, generator=g)
    return x, x @ w_true


def save(path, model, opt, step):
    # DDP_CHECKPOINT_DIR is the job's own directory under spec.checkpoint.path: make it.
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = path + ".tmp"
    torch.save({"model": model.module.state_dict(), "optimizer": opt.state_dict(), "step": step}, tmp)
    os.replace(tmp, path)  # a crash mid-save leaves the previous snapshot whole


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--steps", type=int, default=300)
    p.add_argument("--save-every", type=int, default=20)
    p.add_argument("--batch-size", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--step-delay", type=float, default=0.0,
                   help="extra seconds per step, standing in for a bigger model's compute")
    p.add_argument("--snapshot", default=os.path.join(os.environ.get("DDP_CHECKPOINT_DIR", "."),
                                                      "snapshot.pt"))
    a = p.parse_args()

    dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    w_true = torch.randn(16, 1)
    model = DDP(torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)))
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    step = 0
    if os.path.exists(a.snapshot):
        snap = torch.load(a.snapshot, map_location="cpu")
        model.module.load_state_dict(snap["model"])
        opt.load_state_dict(snap["optimizer"])
        step = snap["step"]
        print(f"rank {rank}: resumed from snapshot step {step}", flush=True)
    loss = torch.tensor(float("nan"))
    while step < a.steps:
        x, y = batch(step, rank, world, a.batch_size, w_true)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        step += 1
        if a.step_delay > 0:
            time.sleep(a.step_delay)
        if rank == 0 and (step % a.save_every == 0 or step == a.steps):
            save(a.snapshot, model, opt, step)
            print(f"step {step} loss {loss.item():.4f} snapshot saved", flush=True)
    dist.barrier()
    if rank == 0:
        print(f"done step {step} loss {loss.item():.4f}", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
