"""A plain PyTorch DDP program, run by torchrun: nothing in it knows about DDPJob.

It follows the snapshot pattern of PyTorch's own DDP tutorial: rank 0 saves a snapshot (model,
optimizer, step) every --save-every steps, and at start every rank loads the snapshot if one
exists. Under a DDPJob the snapshot lives in $DDP_CHECKPOINT_DIR (the job's own directory,
<spec.checkpoint.path>/<namespace>/<name>), so a restarted group continues where the last
snapshot left off.

On a GPU node each process takes the GPU of its LOCAL_RANK and the group uses NCCL, which
all-reduces device tensors only: the model and every batch live on that GPU. Without CUDA it
runs on the CPU with Gloo.

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


def batch(step, rank, world, size, w_true, device):
    # The batch is a function of (step, rank) alone, so a resumed run sees the same data (drawn
    # on the CPU, the same numbers on any device, then moved).
    g = torch.Generator().manual_seed(step * world + rank)
    x = torch.randn(size, 16, generator=g)
    return x.to(device), (x @ w_true).to(device)


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

    if torch.cuda.is_available():
        # One GPU per process: torchrun's LOCAL_RANK, before the group forms (NCCL binds each
        # rank's communicator to the current device).
        local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        torch.cuda.set_device(local_rank)
        device, backend, device_ids = torch.device("cuda", local_rank), "nccl", [local_rank]
    else:
        device, backend, device_ids = torch.device("cpu"), "gloo", None
    dist.init_process_group(backend)
    rank, world = dist.get_rank(), dist.get_world_size()
    torch.manual_seed(0)
    w_true = torch.randn(16, 1)
    net = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1))
    model = DDP(net.to(device), device_ids=device_ids)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr)
    step = 0
    if os.path.exists(a.snapshot):
        snap = torch.load(a.snapshot, map_location=device)
        model.module.load_state_dict(snap["model"])
        opt.load_state_dict(snap["optimizer"])
        step = snap["step"]
        print(f"rank {rank}: resumed from snapshot step {step}", flush=True)
    if rank == 0:
        print(f"rank 0: {backend} on {device}, world size {world}", flush=True)
    loss = torch.tensor(float("nan"))
    while step < a.steps:
        x, y = batch(step, rank, world, a.batch_size, w_true, device)
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
