#!/usr/bin/env python3
"""The table of a run-device.sh run, read from its phase logs: tokens/s, step time, MFU and peak
device memory of ddp-worker, Python eager DDP and torch.compile on GPT-2 small and the bench
minGPT, and ddp-worker's step-time breakdown.

  summarize.py LOG_DIR [--peak-tflops 989] [--layers 12] [--embd 768] [--block 1024]

MFU counts FLOPs as llm.c does: per token 6 N (N: every parameter, the tied embedding once) plus
6 L C T for attention, over the peak dense bf16 rate given.
"""
import argparse
import os
import re


def fields(text, prefix):
    for line in text.splitlines():
        if line.startswith(prefix):
            return dict(re.findall(r"(\w+)=([^\s]+)", line))
    return None


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("logs")
    p.add_argument("--peak-tflops", type=float, default=989.0)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--embd", type=int, default=768)
    p.add_argument("--block", type=int, default=1024)
    a = p.parse_args()
    rows = {}
    for name in ("worker_gpt2", "torch_gpt2", "torch_gpt2_compile", "worker_mingpt", "torch_mingpt"):
        text = read(os.path.join(a.logs, name + ".log"))
        f = fields(text, "summary ") if name.startswith("worker") else fields(text, "torch_ddp ")
        if not f:
            continue
        m = re.search(r"params=(\d+)", text)
        mem = re.search(r"peak_device_mib=(\d+)", text)
        f["params"] = m.group(1) if m else "0"
        f["mem"] = mem.group(1) if mem else "?"
        rows[name] = f
    print(f"| run | tokens/s | step ms | MFU | peak device MiB | params |")
    print("|---|---|---|---|---|---|")
    for name, f in rows.items():
        n = int(f["params"])
        tps = float(f["tokens_per_s"])
        per_token = 6 * n + 6 * a.layers * a.embd * a.block
        mfu = 100 * tps * per_token / (a.peak_tflops * 1e12)
        print(f"| {name} | {tps:,.0f} | {float(f['step_ms']):.1f} | {mfu:.1f}% | {f['mem']} | {n:,} |")
    for model in ("gpt2", "mingpt"):
        w, t = rows.get("worker_" + model), rows.get("torch_" + model)
        if w and t:
            print(f"{model}: ddp-worker / Python eager DDP = "
                  f"{float(w['tokens_per_s']) / float(t['tokens_per_s']):.3f}")
        c = rows.get("torch_" + model + "_compile")
        if w and c:
            print(f"{model}: ddp-worker / torch.compile = "
                  f"{float(w['tokens_per_s']) / float(c['tokens_per_s']):.3f}")
    for name, f in rows.items():
        if not name.startswith("worker"):
            continue
        keys = ("data_ms", "forward_ms", "backward_ms", "optimizer_ms", "sync_ms")
        parts = {k: float(f[k]) for k in keys}
        # Host time not in any phase: Reducer::FinalizeBackward waiting for the buckets' NCCL
        # work (the host poll) plus bookkeeping.
        rest = float(f["step_ms"]) - sum(parts.values())
        print(f"{name} host-side breakdown (ms/step): " +
              " ".join(f"{k}={v:.2f}" for k, v in parts.items()) +
              f" finalize_wait={rest:.2f} allreduce={float(f['allreduce_ms']):.3f}"
              f" exposed_allreduce={float(f['exposed_allreduce_ms']):.3f}")


if __name__ == "__main__":
    main()
