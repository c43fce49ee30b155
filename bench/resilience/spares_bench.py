#!/usr/bin/python3
"""Spares under pod start latency: what a pod loss costs when a new pod takes S seconds to start
(a cluster's scheduling, image pull and container start), with and without a hot spare.

Systems (local_job.py; 2 pods x 1 rank of resilience_bench.py's minGPT, CPU/Gloo):
  inplace1  recovery InPlace, spares: 1    a spare takes the lost pod's rank at once
  inplace0  recovery InPlace, spares: 0    the survivors wait for the lost pod's replacement
  restart   recovery Restart               every loss is a new round: every pod starts again
  torchrun  torchrun (one agent, a "pod" is a worker process) restarts every worker; the lost
            pod's worker starts S s late (torch_train.py --start-delay-file), the others wait
            for it in init_process_group, as agents on a cluster wait for a replacement pod
A pod loss is SIGKILL of the process group of the pod that holds node rank N (pod 1, pod 0),
`ddp-operator local --pod-start-delay S` delays every pod it creates by S (the first ones too).

Parts (--parts):
  loss     per start delay S (--delays) and system, one job losing pod 1, then pod 0 once the
           group has stepped --gap steps past its recovery. Per loss: the stall (how late rank
           0's step L + 2 came against L's time + 2 normal steps; L: its last step before the
           loss), who took the rank (InPlace: the group's log) and the round at the end (a new
           round = the job restarted).
  idle     fault-free inplace0 and inplace1 runs, alternated, --idle-repeats pairs: the normal
           step time with and without an idle spare, and the spare pod's host memory (RSS,
           PSS, anonymous) sampled mid-run (no GPU here: device memory is not measured).
  goodput  a pod lost every --period s (pod 1, pod 0, pod 1, ...; the first after half a
           period) at --goodput-delay S, for --losses losses, per system, against a fault-free
           run of the same steps: goodput = fault-free training time / faulty training time
           (rank 0's first to last step: the first pods' start is not training), and the same
           scaled by the two runs' normal step time (the machine's speed drifts).

  bench/resilience/spares_bench.py                            # loss at 0, 20, 60 s; idle
  bench/resilience/spares_bench.py --parts goodput            # about 15 min
  bench/resilience/spares_bench.py --quick                    # loss at 0 and 5 s, idle
  bench/resilience/spares_bench.py --report DIR               # a --keep run's tables again
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import sys
import tempfile
import time

import local_job as lj
import resilience_bench as rb

SYSTEMS = {"inplace1": ("inplace", 1), "inplace0": ("inplace", 0), "restart": ("restart", 0),
           "torchrun": ("torchrun", 0)}


def lose(job, node, delay):
    """A pod loss as a cluster delivers it; returns the pod's name or None (no such pod now)."""
    if job.system == "torchrun":
        job.delay_restart(node, delay)
        pid = job.kill_trainer(node)
        return f"worker-{node}" if pid else None
    pod = job.pod_holding(node)
    if pod is None or lj._signal(pod.pid, signal.SIGKILL, True) is None:
        return None
    return pod.name


def run_job(name, delay, a, steps, schedule, work, sample_step=None):
    """One job. schedule(job, now, losses) -> the node rank to lose now, or None. With a spare, its
    memory is sampled once rank 0 logged `sample_step` (default: just before the first loss).
    Returns the run's record (a dict, JSON-ready)."""
    system, spares = SYSTEMS[name]
    d = os.path.join(work, f"{name}-s{delay:g}-{int(time.time() * 1000) % 100000}")
    job = lj.Job(system, d, a, steps, pods=a.pods, spares=spares, delay=delay,
                 rendezvous_timeout=max(120, 2 * delay + 60), delay_file=system == "torchrun")
    job.start()
    losses, memory, rc = [], None, None
    timeout = a.run_timeout + 4 * delay
    while rc is None:
        now = time.time()
        if job.expired(timeout, f"{name} S={delay:g}"):
            rc = "timeout"
            break
        job.log.update()
        node = schedule(job, now, losses)
        if spares and memory is None and (node is not None or
                                          (sample_step is not None and job.log.last() >= sample_step)):
            memory = spare_memory(job)
        if node is not None:
            last = job.log.until(now)
            pod = lose(job, node, delay)
            if pod:
                losses.append({"t": now, "node": node, "pod": pod, "last": last[1] if last else 0})
        time.sleep(0.1)
        rc = job.poll()
    steps_log = job.log.update()
    ns = rb.normal_step(steps_log)
    for x in losses:
        x["stall"] = lj.stall(steps_log, x["t"], ns)
    r, rec, dis, rnd = job.charges()
    return {"system": name, "delay": delay, "rc": rc, "phase": job.phase(), "wall": time.time() - job.t0,
            "steps": steps, "pods": a.pods, "losses": losses, "charges": [r, rec, dis], "round": rnd, "normal_step": ns,
            "train": steps_log[-1][0] - steps_log[0][0] if len(steps_log) > 1 else None,
            "spare_took": spare_takes(job) if system == "inplace" else 0,
            "sums": {str(k): v for k, v in job.checksums().items()}, "memory": memory, "dir": d}


def spare_takes(job):
    """How often the group gave a spare a node rank (its authority's log)."""
    n = 0
    for path in job.log.files():
        if "rendezvous" in os.path.basename(path):
            with open(path, errors="replace") as f:
                n += sum("group authority: spare " in x and " takes node rank " in x for x in f)
    return n


def spare_memory(job):
    """Host memory of the idle spare pod and, for comparison, of a training pod (KiB)."""
    pods = job.pods()
    spare = next((p for p in pods if p.role == "spare" and p.node is None), None)
    worker = next((p for p in pods if p.role == "worker" and p.node is not None), None)
    return {"spare": lj.group_memory(spare.pid) if spare else None,
            "worker": lj.group_memory(worker.pid) if worker else None}


def loss_schedule(a):
    """Pod 1 once rank 0 logged --lead steps; pod 0 once it logged --gap steps past the first
    loss's recovery (its step L + 2) and, with spares and --spare-ready, once the status shows
    as many ready spares as the job has again (the first loss's replacement registered as the
    new spare), so that each loss finds a spare."""
    def schedule(job, now, losses):
        if len(losses) >= 2:
            return None
        need = a.lead if not losses else losses[0]["last"] + 2 + a.gap
        if losses and a.spare_ready and job.spares and job.status().get("readySpares", 0) < job.spares:
            return None
        return (1 if not losses else 0) if job.log.last() >= need else None
    return schedule


def period_schedule(a):
    def schedule(job, now, losses):
        if len(losses) >= a.losses or not job.log.steps:
            return None
        due = job.log.steps[0][0] + (len(losses) + 0.5) * a.period
        return (1, 0)[len(losses) % 2] if now >= due else None
    return schedule


def none_schedule(job, now, losses):
    return None


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--parts", default="loss,idle", help="loss, idle, goodput (comma-separated)")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--delays", default="0,20,60", help="pod start delays S for the loss part, seconds")
    p.add_argument("--pods", type=int, default=2)
    p.add_argument("--lead", type=int, default=20, help="loss: steps before the first loss")
    p.add_argument("--gap", type=int, default=20, help="loss: steps between a recovery and the next loss")
    p.add_argument("--spare-ready", type=int, default=1, choices=(0, 1),
                   help="loss: with spares, the second loss waits for the spare's replacement (0: "
                        "--gap steps only, so at a start delay S longer than the gap it finds none)")
    p.add_argument("--idle-steps", type=int, default=150)
    p.add_argument("--idle-repeats", type=int, default=2)
    p.add_argument("--goodput-delay", type=float, default=20.0)
    p.add_argument("--period", type=float, default=60.0, help="goodput: seconds between pod losses")
    p.add_argument("--losses", type=int, default=2, help="goodput: pod losses per run")
    p.add_argument("--checkpoint-every", type=int, default=20, help="steps (Restart's fallback, torchrun's snapshots)")
    p.add_argument("--run-timeout", type=float, default=600.0, help="hard limit per run, plus 4 S")
    p.add_argument("--quick", action="store_true", help="smoke test: delays 0,5, one idle pair")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--operator", default=os.path.join(rb.ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(rb.ROOT, "build", "worker", "ddp-worker"))
    p.add_argument("--report", metavar="WORKDIR", help="print the tables of a --keep run, running nothing")
    a = p.parse_args()
    if a.report:
        with open(os.path.join(a.report, "results.json")) as f:
            saved = json.load(f)
        report(saved["runs"], saved["header"], saved.get("refs", {}))
        return
    if a.quick:
        a.delays, a.idle_repeats, a.idle_steps = "0,5", 1, 80
    parts = [x for x in a.parts.split(",") if x]
    systems = [s for s in a.systems.split(",") if s]
    bad = [s for s in systems if s not in SYSTEMS] + [x for x in parts if x not in ("loss", "idle", "goodput")]
    if bad:
        sys.exit(f"unknown system or part: {', '.join(bad)}")
    rb.prepare_run(a)
    work = tempfile.mkdtemp(prefix="spares-bench-")
    runs, refs = [], {}
    try:
        loss_steps = a.lead + 2 * (2 + a.gap) + 20

        def steps_for(delay):
            # Waiting for the spare's replacement takes about S: 4 more steps per second of it
            # (a step takes more than 0.25 s here), so the second loss still comes in training.
            return loss_steps + (int(4 * delay) if a.spare_ready else 0)
        header = (f"spares bench {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ} nproc={os.cpu_count()}: minGPT L4 H4 "
                  f"C128 T64, batch 16/rank, {a.pods} pods x 1 rank, CPU/Gloo, 1 thread; loss jobs {loss_steps} "
                  f"steps (pod 1 after {a.lead}, pod 0 {a.gap} steps after recovering"
                  f"{' and, with a spare, once it was replaced; + 4 S steps' if a.spare_ready else ''}); "
                  f"checkpoint every {a.checkpoint_every}; InPlace livenessTimeoutSeconds 5")
        print(f"# {header}\n# work dir {work}", flush=True)

        def record(res, part):
            res["part"] = part
            runs.append(res)
            print(line(res), flush=True)
            with open(os.path.join(work, "results.json"), "w") as f:
                json.dump({"header": header, "runs": runs, "refs": refs}, f, indent=1)

        if "loss" in parts:
            for i, delay in enumerate(float(x) for x in a.delays.split(",")):
                n = steps_for(delay)
                if str(n) not in refs:
                    refs[str(n)] = lj.reference(a, n, a.pods)
                for s in (systems if i % 2 == 0 else systems[::-1]):
                    record(run_job(s, delay, a, n, loss_schedule(a), work), "loss")
        if "idle" in parts:
            for i in range(a.idle_repeats):
                for s in (("inplace0", "inplace1") if i % 2 == 0 else ("inplace1", "inplace0")):
                    record(run_job(s, 0, a, a.idle_steps, none_schedule, work, a.idle_steps // 2), "idle")
        if "goodput" in parts:
            st = rb.calibrate(a, ranks=a.pods)
            # Half a period past the last loss, so a faster machine still sees every loss.
            steps = int((a.losses + 0.5) * a.period / st) // 10 * 10
            print(f"# goodput: {a.pods}-rank step {st * 1e3:.0f} ms -> {steps} steps; a pod lost every "
                  f"{a.period:g} s at S={a.goodput_delay:g}", flush=True)
            for s in systems:
                record(run_job(s, 0, a, steps, none_schedule, work), "goodput-clean")
            for s in systems[::-1]:
                record(run_job(s, a.goodput_delay, a, steps, period_schedule(a), work), "goodput")
        report(runs, header, refs)
    finally:
        rb.cleanup()
        if a.keep:
            print(f"# run directories kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def line(res):
    return (f"  {res['part']:13s} {res['system']:9s} S={res['delay']:<4g} {res['wall']:6.1f} s  rc={res['rc']} "
            f"{res['phase']}  round {res['round']}  charged {res['charges']}  stalls [{stalls(res)}]  "
            f"spare took {res['spare_took']}  checksums {sorted(set(v[1] for v in res['sums'].values()))}")


def report(runs, header, refs):
    fmt = rb.fmt
    print(f"\n{header}\n")
    loss = [r for r in runs if r["part"] == "loss"]
    if loss:
        print("Pod losses (reference checksums of fault-free runs of the same steps: "
              f"{', '.join(f'{k} steps {v}' for k, v in refs.items() if k.isdigit()) or refs.get('loss')}):\n")
        print("| start delay S | system | result | pod 1 lost: stall s | pod 0 lost: stall s | spare took the rank "
              "| round at the end | charged r+rec+d | every rank = reference |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in loss:
            st = {x["node"]: fmt(x["stall"]) for x in r["losses"]}
            print(f"| {r['delay']:g} | {r['system']} | {result(r)} | {st.get(1, 'not lost')} | {st.get(0, 'not lost')} "
                  f"| {r['spare_took'] if r['system'] == 'inplace1' else '-'} | {r['round']} | "
                  f"{'+'.join(map(str, r['charges']))} | {same(r, refs.get(str(r['steps']), refs.get('loss')))} |")
    idle = [r for r in runs if r["part"] == "idle"]
    if idle:
        print("\nIdle spare, fault-free runs in the order run:\n")
        print("| run | spares | wall s | normal step ms | spare pod: processes, RSS / PSS / anonymous MiB "
              "| a training pod: processes, RSS / PSS / anonymous MiB |")
        print("|---|---|---|---|---|---|")
        for r in idle:
            m = r["memory"] or {}
            print(f"| {r['system']} | {SYSTEMS[r['system']][1]} | {r['wall']:.1f} | "
                  f"{fmt(r['normal_step'] and r['normal_step'] * 1e3, '.0f')} | {mem(m.get('spare'))} | "
                  f"{mem(m.get('worker'))} |")
        ns = {k: [r["normal_step"] for r in idle if r["system"] == k and r["normal_step"]] for k in ("inplace0", "inplace1")}
        if ns["inplace0"] and ns["inplace1"]:
            m0, m1 = (sum(v) / len(v) for v in (ns["inplace0"], ns["inplace1"]))
            spread = max(max(v) / min(v) - 1 for v in ns.values())
            print(f"\nnormal step with a spare / without: {m1 / m0:.3f} (means of {len(ns['inplace1'])} and "
                  f"{len(ns['inplace0'])} runs); runs of one setting spread by up to {spread * 100:.1f}%")
    good = [r for r in runs if r["part"] == "goodput"]
    if good:
        clean = {r["system"]: r for r in runs if r["part"] == "goodput-clean"}
        print(f"\nGoodput, a pod lost every period at S = {good[0]['delay']:g} s:\n")
        print("| system | fault-free training s | faulty training s | losses: stall s | goodput | speed-corrected "
              "| round at the end | charged r+rec+d | every rank = fault-free |")
        print("|---|---|---|---|---|---|---|---|---|")
        for r in good:
            c = clean.get(r["system"])
            ok = c and r["rc"] == 0 and c["rc"] == 0 and r["train"] and c["train"]
            g = c["train"] / r["train"] if ok else None
            gc = g * r["normal_step"] / c["normal_step"] if g and r["normal_step"] and c["normal_step"] else None
            ref = sorted({v[1] for v in c["sums"].values()}) if c else []
            print(f"| {r['system']} | {fmt(c and c['train'], '.1f')} | {fmt(r['train'], '.1f')} | "
                  f"{stalls(r)} | {fmt(g, '.3f')} | {fmt(gc, '.3f')} | {r['round']} | {'+'.join(map(str, r['charges']))} | "
                  f"{same(r, ref[0] if len(ref) == 1 else None)} |")


def stalls(r):
    return ", ".join(f"pod {x['node']} {rb.fmt(x['stall'])}" for x in r["losses"])


def result(r):
    return "Succeeded" if r["rc"] == 0 and r["phase"] == "Succeeded" else f"FAILED ({r['rc']}, {r['phase']})"


def same(r, want):
    sums = r["sums"]
    agree = len(sums) == r.get("pods", 2) and len({v[1] for v in sums.values()}) == 1 and \
        all(v[0] == r["steps"] for v in sums.values())
    if not agree:
        return "NO (ranks disagree or unfinished)"
    return "yes" if want and next(iter(sums.values()))[1] == want else "agree; differ from the reference"


def mem(m):
    if not m:
        return "-"
    return f"{m['processes']}, {m['Rss'] / 1024:.0f} / {m['Pss'] / 1024:.0f} / {m['Anonymous'] / 1024:.0f}"


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        rb.cleanup()
        sys.exit(130)
