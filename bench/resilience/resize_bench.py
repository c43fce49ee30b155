#!/usr/bin/python3
"""What a resize costs: an elastic job scripted 4 -> 3 -> 2 -> 4 pods, with pods that take S
seconds to start (a cluster's scheduling, image pull and container start), under three systems
measured in the same run (2 cores here: 4 ranks of resilience_bench.py's minGPT, CPU/Gloo, one
thread each).

Systems (local_job.py):
  inplace   ddp-operator local, recovery InPlace with spec.elastic: the group resizes at its next
            generation; the survivors keep their processes, newcomers are healed by broadcast
  restart   the same job under recovery Restart: every resize is a new round (a stop with a
            checkpoint, every pod created again, each S late)
  heal      the reference: the same InPlace job at its first size, no resize; at each step a
            resize would be at, rank 1's trainer is killed (SIGKILL) and healed in place
  torchrun  torchrun's restart-all (the peer): on a membership change every worker restarts and
            loads the last snapshot (--checkpoint-every); the bench stops the worker group and
            starts it again at the new size; a new rank (growth) starts S late, the others wait
            for it in init_process_group, as torchrun's agents wait for a new pod
The resizes: `ddp-operator local --scale-at` (spec.replicas changed once rank 0 passed the step),
the bench itself for torchrun, at the same steps.

Per resize: the pause, the longest time rank 0's furthest step stood still between two resize
marks (replayed steps included), less the median step time of that window; what the trainers
say (InPlace: `resized in`, heal: `recovered in`); then per run the round at the end, the
checkpoints read and the trainer processes started again.

  bench/resilience/resize_bench.py                    # S = 0 and 10 s, all three systems
  bench/resilience/resize_bench.py --delays 0 --systems inplace
"""
import argparse
import datetime
import os
import re
import shutil
import sys
import tempfile
import time

import local_job as lj
import resilience_bench as rb

RESIZED = re.compile(r"rank (\d+): (?:resized|recovered) in ([0-9.eE+-]+)s")


def pauses(steps, marks):
    """Per window [marks[k], marks[k+1]) of rank 0's furthest step: the longest time that step
    stood still (from when it was first reached to when a later one was), less the window's
    median step time. `steps`: [(time, step)] sorted by time, replays included."""
    out = []
    for k, lo in enumerate(marks):
        hi = marks[k + 1] if k + 1 < len(marks) else float("inf")
        furthest, since, gaps = -1, None, []
        for t, s in steps:
            if s <= furthest:
                continue
            if since is not None and lo <= furthest < hi:
                gaps.append(t - since)
            furthest, since = s, t
        if not gaps:
            out.append(None)
            continue
        median = sorted(gaps)[len(gaps) // 2]
        out.append(max(gaps) - median)
    return out


def sizes_arg(text):
    return [int(x) for x in text.split(",") if x]


def run_operator(system, d, a, delay):
    """One ddp-operator local job of `system` (inplace, restart or heal) with the scripted
    resizes (heal: the trainer kills in their place)."""
    scale = ",".join(f"{at}={n}" for at, n in zip(a.at, a.sizes[1:]))
    heal = system == "heal"
    job = lj.Job("inplace" if heal else system, d, a, a.steps, pods=a.sizes[0], delay=delay,
                 elastic=(1, max(a.sizes)), rendezvous_timeout=max(120, 2 * delay + 60),
                 operator_args=[] if heal else ["--scale-at", scale])
    job.start()
    kills = list(a.at) if heal else []
    deadline = time.time() + a.run_timeout + 8 * delay
    while job.poll() is None and time.time() < deadline:
        if kills:
            job.log.update()
            if job.log.last() >= kills[0] and job.kill_trainer(1) is not None:
                kills.pop(0)
        time.sleep(0.1 if kills else 0.3)
    if job.poll() is None:
        print(f"  ! {system} S={delay:g}: hard timeout: stopping it", flush=True)
        job.stop()
    job.log.update()
    resized = []
    for path in job.log.files():
        with open(path, errors="replace") as f:
            resized += [float(m.group(2)) for m in map(RESIZED.search, f) if m]
    restarts, recoveries, disruptions, rnd = job.charges()
    return {"steps": job.log.steps, "phase": job.phase(), "round": rnd, "restarts": restarts,
            "recoveries": recoveries, "reads": job.count_in_logs("resumed from checkpoint"),
            "restarted": restarted(system, job, rnd), "resized": resized}


def restarted(system, job, rnd):
    """Trainer processes started again, as the job's own logs say: InPlace's supervisors log each
    restart of a rank ("restarted rank"); a new round under Restart starts every pod again."""
    if system == "restart":
        return f"every pod, {rnd} round(s)"
    return str(job.count_in_logs("restarted rank"))


def run_torchrun(d, a, delay):
    """torchrun's restart-all, one worker group per size, each resuming the last snapshot."""
    steps, snapshot, phase = [], None, "Succeeded"
    for k, n in enumerate(a.sizes):
        seg = os.path.join(d, f"size{k}-{n}")
        os.makedirs(seg)
        job = lj.Job("torchrun", seg, a, a.steps, pods=n, delay_file=True)
        if snapshot:
            shutil.copy(snapshot, os.path.join(seg, "snapshot.pt"))
        if k > 0 and n > a.sizes[k - 1]:
            for rank in range(a.sizes[k - 1], n):  # the new pods start late
                job.delay_restart(rank, delay)
        job.start()
        until = a.at[k] if k < len(a.at) else None
        deadline = time.time() + a.run_timeout + 4 * delay
        while job.poll() is None and time.time() < deadline:
            job.log.update()
            if until is not None and job.log.last() >= until:
                break
            time.sleep(0.1)
        job.log.update()
        steps += job.log.steps
        if until is None and job.poll() != 0:
            phase = "failed" if job.poll() is not None else "timeout"
        job.stop()
        if until is not None and job.log.last() < until:
            phase = "failed"
            break
        snapshot = os.path.join(seg, "snapshot.pt")
        if not os.path.exists(snapshot):
            snapshot = None
    steps.sort()
    groups = len(a.sizes)
    return {"steps": steps, "phase": phase, "round": groups - 1, "restarts": groups - 1, "recoveries": 0,
            "reads": groups - 1, "restarted": f"every worker, {groups - 1} time(s)", "resized": []}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", default="inplace,restart,torchrun")
    p.add_argument("--delays", default="0,10", help="pod start delays S, seconds")
    p.add_argument("--sizes", type=sizes_arg, default=[4, 3, 2, 4], help="the pods at each stage")
    p.add_argument("--at", type=sizes_arg, default=[100, 200, 300], help="rank 0's step of each resize")
    p.add_argument("--steps", type=int, default=400)
    p.add_argument("--checkpoint-every", type=int, default=50, help="torchrun's snapshots; Restart's fallback")
    p.add_argument("--run-timeout", type=float, default=900.0, help="hard limit per run, plus 8 S")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--operator", default=os.path.join(rb.ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(rb.ROOT, "build", "worker", "ddp-worker"))
    a = p.parse_args()
    if len(a.at) != len(a.sizes) - 1 or sorted(a.at) != a.at or a.at[-1] >= a.steps:
        sys.exit("--at: one increasing step per resize (len(--sizes) - 1), each below --steps")
    systems = [s for s in a.systems.split(",") if s]
    for s in systems:
        if s not in ("inplace", "restart", "torchrun", "heal"):
            sys.exit(f"--systems: unknown system {s!r} (inplace, restart, torchrun, heal)")
    rb.prepare_run(a)
    work = tempfile.mkdtemp(prefix="resize-bench-")
    results = []
    try:
        sizes = " -> ".join(map(str, a.sizes))
        print(f"# resize bench {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ}  nproc={os.cpu_count()}  "
              f"{sizes} pods at steps {a.at}, {a.steps} steps, minGPT L4 H4 C128 T64 batch 16, "
              f"checkpoint every {a.checkpoint_every}; work dir {work}", flush=True)
        for delay in [float(x) for x in a.delays.split(",") if x]:
            for system in systems:
                d = os.path.join(work, f"{system}-s{delay:g}")
                t0 = time.time()
                r = run_torchrun(d, a, delay) if system == "torchrun" else run_operator(system, d, a, delay)
                r.update(system=system, delay=delay, wall=time.time() - t0, pauses=pauses(r["steps"], a.at))
                results.append(r)
                print(f"  {system:8s} S={delay:<4g} {r['phase']:9s} pauses "
                      f"{', '.join(rb.fmt(x) for x in r['pauses'])} s  round {r['round']}  "
                      f"checkpoint reads {r['reads']}  wall {r['wall']:.0f} s", flush=True)
        report(results, a)
    finally:
        rb.cleanup()
        if a.keep:
            print(f"# kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(results, a):
    names = [f"{f} -> {t}" for f, t in zip(a.sizes, a.sizes[1:])]
    print("\n| start delay S | system | " + " | ".join(f"{n}: pause s" for n in names) +
          " | trainers say (InPlace: resized / recovered in, s) | round at end | checkpoints read | trainers restarted | phase |")
    print("|---" * (len(names) + 7) + "|")
    by_delay = {}
    for r in results:
        by_delay.setdefault(r["delay"], {})[r["system"]] = r
        said = ", ".join(f"{x:.2f}" for x in r["resized"][:6]) or "-"
        print(f"| {r['delay']:g} | {r['system']} | " + " | ".join(rb.fmt(x) for x in r["pauses"]) +
              f" | {said} | {r['round']} | {r['reads']} | {r['restarted']} | {r['phase']} |")
    print("\nRatio of the summed pauses to InPlace's, per start delay:")
    for delay, rs in by_delay.items():
        base = rs.get("inplace")
        total = {s: sum(x for x in r["pauses"] if x is not None) for s, r in rs.items()}
        if not base or not total["inplace"]:
            continue
        print(f"  S={delay:g}: " + ", ".join(f"{s} {total[s]:.1f} s ({total[s] / total['inplace']:.1f}x)"
                                            for s in rs))


if __name__ == "__main__":
    main()
