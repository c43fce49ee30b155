#!/usr/bin/python3
"""A loss without a spare: what a pod lost every P seconds costs when a new pod takes S seconds to
start, for a group that goes on smaller at once and grows back (elastic in place), against
today's wait for the replacement and against one hot spare, all measured in one run.

Systems (local_job.py; 4 pods x 1 rank, CPU/Gloo, recovery InPlace, no spare unless said):
  shrink   spec.elastic minReplicas 2, maxReplicas 4: the group drops the lost member at its
           next generation (the highest member takes its node rank), trains on at 3 with the
           same global batch, and grows back to 4 at a step agreement once the replacement has
           started and prepared (worker/group/authority.h rule 10)
  wait     no spec.elastic: the survivors wait for the replacement's start, then heal it
  spare    no spec.elastic, spares: 1: the spare takes the rank at once; the replacement
           becomes the new spare
  clean    the shrink job with no loss: the undisturbed run every ratio is against
  fixed    the clean job at one pod fewer (3, no spec.elastic, the same global batch, no loss):
           the peer of the loss column. Two sizes sum the gradients in a different order; on this
           model a difference at the log's resolution (1e-6) grows chaotically over the steps
           after, so the shrink's loss is compared with the clean run's where it first differs
           (the size change) and over the whole run against this peer's
A loss is SIGKILL of the process group of the pod holding node rank 1, then 0, 2, 1, ... (pod 0
included), the first half a period after rank 0's first step, then one every period.
`ddp-operator local --pod-start-delay S` delays every pod it creates by S: S models a cluster's
scheduling, image pull and container start (local pods start in milliseconds; the kit's real
pods in 1-3 s; a GPU cluster's in tens of seconds to minutes, which S = 120 stands for).

The model: resilience_bench.py's minGPT with micro-batches of 4 and a global batch of 12 of them
(48 samples: 3 per rank at 4, 4 at 3, 6 at 2; the same samples and math at every size), and
--emulate-device-ms: each micro-batch's forward and backward take at least that long, as on an
accelerator of the rank's own. Without it the ranks share this host's cores, and a group of 3
would train as fast as one of 4 (the same cores, fewer processes): no cluster works that way.

Per loss, from rank 0's step log (every step is logged): the time training stood still, the sum
over the step intervals after the loss (until the next loss) longer than 1.6 x the median of the
10 intervals that followed each (the step time at the size the group then ran at) and by more
than 0.25 s, of each one's excess over that median; how many such standstills (a shrink: the
loss and the growth back; a step slowed by a newcomer's start on this host's shared cores counts
too). Per run: samples per second relative to the clean run (the same steps and the
same global batch: the clean run's training time over this one's, rank 0's first to last step),
round, charges, checkpoints read, whether every rank ended on one checksum, and the largest
difference of rank 0's logged loss from the clean run's at the same step.

  bench/resilience/shrink_bench.py                               # both scenarios, about 2 h here
  bench/resilience/shrink_bench.py --scenarios 20:60:4           # S = 20 s, a loss every 60 s
  bench/resilience/shrink_bench.py --report DIR                  # a --keep run's tables again
  bench/resilience/shrink_bench.py --scenarios 120:300:2 --systems wait --clean-from DIR
                                             # one system again, against DIR's undisturbed run
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import statistics
import sys
import tempfile
import time

import local_job as lj
import resilience_bench as rb

SYSTEMS = ("shrink", "wait", "spare", "fixed")
STILL_RATIO, STILL_MIN = 1.6, 0.25  # standstills(): a step interval that stood still
LOSS_LINE = re.compile(r"\] step (\d+)/\d+ loss ([0-9.eE+-]+) ")


def pods_of(system, a):
    return a.pods - 1 if system == "fixed" else a.pods


def worker_args(a, pods):
    return [f"--batch-size={a.micro}", f"--grad-accum={a.global_micro // pods}",
            f"--emulate-device-ms={a.device_ms:g}"]


def make_job(system, d, a, steps, delay, deadline):
    elastic = (a.min, a.pods) if system in ("shrink", "clean") else None
    # The job's activeDeadlineSeconds is the bench's own hard limit: a wait at S = 120 s spends
    # 4 S before it ends (the first pods' start and each loss's), past --run-timeout alone.
    a = argparse.Namespace(**{**vars(a), "run_timeout": deadline})
    pods = pods_of(system, a)
    return lj.Job("inplace", d, a, steps, pods=pods, spares=1 if system == "spare" else 0,
                  delay=delay, rendezvous_timeout=max(120, 2 * delay + 60), elastic=elastic,
                  worker_args=worker_args(a, pods))


def run_job(system, delay, period, losses_wanted, steps, a, work):
    d = os.path.join(work, f"{system}-s{delay:g}-{int(time.time() * 1000) % 100000}")
    timeout = a.run_timeout + 4 * delay + steps * 1.5
    job = make_job(system, d, a, steps, delay, timeout)
    job.start()
    order = [1, 0, 2]
    losses, rc = [], None
    while rc is None:
        now = time.time()
        if job.expired(timeout, f"{system} S={delay:g}"):
            rc = "timeout"
            break
        job.log.update()
        if system not in ("clean", "fixed") and len(losses) < losses_wanted and job.log.steps:
            due = job.log.steps[0][0] + (len(losses) + 0.5) * period
            if now >= due:
                node = order[len(losses) % len(order)]
                pod = job.pod_holding(node)
                if pod is not None and lj._signal(pod.pid, signal.SIGKILL, True) is not None:
                    losses.append({"t": now, "node": node, "pod": pod.name})
                    print(f"    {system} S={delay:g}: lost {pod.name} (node rank {node}) at "
                          f"{now - job.log.steps[0][0]:.0f} s of training", flush=True)
        time.sleep(0.1)
        rc = job.poll()
    steps_log = job.log.update()
    r, rec, dis, rnd = job.charges()
    return {"system": system, "pods": pods_of(system, a), "delay": delay, "period": period, "rc": rc,
            "phase": job.phase(),
            "wall": time.time() - job.t0, "steps": steps, "losses": losses, "charges": [r, rec, dis],
            "round": rnd, "steps_log": steps_log, "losses_by_step": loss_curve(job),
            "train": steps_log[-1][0] - steps_log[0][0] if len(steps_log) > 1 else None,
            "sums": {str(k): v for k, v in job.checksums().items()},
            "resumed": job.count_in_logs("resumed from checkpoint"),
            "moves": job.count_in_logs("with its trainers: ranks stay dense"),
            "grew_back": job.count_in_logs("its members leaving at a step agreement"),
            "dir": d}


def loss_curve(job):
    """{step: loss} of rank 0's log lines (a pod that held rank 0 later writes them too)."""
    out = {}
    for path in job.log.files():
        with open(path, errors="replace") as f:
            for line in f:
                m = LOSS_LINE.search(line)
                if m:
                    out[int(m.group(1))] = float(m.group(2))
    return out


def standstills(steps_log, t0, t1):
    """[(at, excess s)] of rank 0's step intervals ending in (t0, t1] that stood still: longer
    than STILL_RATIO x the median of the 10 intervals that follow (the step time at the size the
    group then ran at) and by more than STILL_MIN s; each one's excess over that median. A size
    change alone (4/3 of the step time at 3 of 4) is not a standstill; a heal is."""
    iv = [(b[0], b[0] - a[0]) for a, b in zip(steps_log, steps_log[1:]) if b[1] > a[1]]
    out = []
    for i, (at, gap) in enumerate(iv):
        if not (t0 < at <= t1):
            continue
        after = [g for _, g in iv[i + 1:i + 11]] or [g for _, g in iv[max(0, i - 10):i]]
        if not after:
            continue
        ref = statistics.median(after)
        if gap > STILL_RATIO * ref and gap - ref > STILL_MIN:
            out.append((at, gap - ref))
    return out


def summarize(run, clean):
    steps_log = run["steps_log"]
    losses = run["losses"]
    per = []
    for i, x in enumerate(losses):
        t1 = losses[i + 1]["t"] if i + 1 < len(losses) else float("inf")
        st = standstills(steps_log, x["t"], t1)
        per.append({"node": x["node"], "pod": x["pod"], "still": sum(e for _, e in st), "count": len(st),
                    "parts": [round(e, 2) for _, e in st]})
    ratio = clean["train"] / run["train"] if clean and clean.get("train") and run.get("train") and \
        run["rc"] == 0 else None
    diff, first = None, None
    if clean and run["losses_by_step"]:
        mine = {int(k): v for k, v in run["losses_by_step"].items()}  # str keys from results.json
        ref = {int(k): v for k, v in clean["losses_by_step"].items()}
        gaps = [(s, abs(mine[s] - ref[s])) for s in sorted(mine) if s in ref]
        if gaps:
            diff = max(g for _, g in gaps)
            first = next(((s, g) for s, g in gaps if g > 0), None)
    sums = run["sums"]
    agree = len(sums) == run.get("pods", 4) and len({v[1] for v in sums.values()}) == 1 and \
        all(v[0] == run["steps"] for v in sums.values())
    return {"per_loss": per, "ratio": ratio, "loss_diff": diff, "first_diff": first, "agree": agree}


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--scenarios", default="20:60:4,120:300:3",
                   help="S:P:N,... pod start delay S s, a loss every P s, N losses")
    p.add_argument("--systems", default=",".join(SYSTEMS))
    p.add_argument("--pods", type=int, default=4)
    p.add_argument("--min", type=int, default=2, help="shrink: spec.elastic.minReplicas")
    p.add_argument("--micro", type=int, default=4, help="samples per micro-batch")
    p.add_argument("--global-micro", type=int, default=12, help="micro-batches per global batch")
    p.add_argument("--device-ms", type=float, default=100.0, help="--emulate-device-ms")
    p.add_argument("--checkpoint-every", type=int, default=1000000, help="steps (none: nothing reads one)")
    p.add_argument("--run-timeout", type=float, default=900.0, help="hard limit per run, plus 4 S + 1.5 s a step")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--operator", default=os.path.join(rb.ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(rb.ROOT, "build", "worker", "ddp-worker"))
    p.add_argument("--report", metavar="WORKDIR", help="print the tables of a --keep run, running nothing")
    p.add_argument("--clean-from", metavar="WORKDIR",
                   help="take each scenario's undisturbed run from this earlier --keep run (the same "
                        "scenario and steps) instead of running it again")
    a = p.parse_args()
    if a.report:
        with open(os.path.join(a.report, "results.json")) as f:
            saved = json.load(f)
        report(saved["runs"], saved["header"])
        return
    if a.global_micro % a.pods or any(a.global_micro % n for n in range(a.min, a.pods + 1)):
        sys.exit("--global-micro must split evenly at every size from --min to --pods")
    systems = [s for s in a.systems.split(",") if s]
    if any(s not in SYSTEMS for s in systems):
        sys.exit(f"unknown system in {a.systems}")
    scenarios = [tuple(float(v) for v in x.split(":")) for x in a.scenarios.split(",") if x]
    rb.prepare_run(a)
    work = tempfile.mkdtemp(prefix="shrink-bench-")
    runs = []
    header = (f"shrink bench {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ} nproc={os.cpu_count()}: minGPT L4 H4 "
              f"C128 T64, {a.pods} pods x 1 rank, CPU/Gloo, 1 thread; micro-batch {a.micro}, global batch "
              f"{a.global_micro} micro-batches ({a.global_micro * a.micro} samples); --emulate-device-ms "
              f"{a.device_ms:g}; InPlace livenessTimeoutSeconds 5; shrink: minReplicas {a.min}")
    print(f"# {header}\n# work dir {work}", flush=True)
    try:
        for delay, period, n in scenarios:
            # The clean run's step: (global / pods) micro-batches of device time, plus the rest.
            est = a.global_micro / a.pods * a.device_ms / 1000 * 1.15
            steps = int((n + 0.5) * period / est) // 10 * 10
            print(f"# S={delay:g} s, a loss every {period:g} s, {int(n)} losses: {steps} steps "
                  f"(~{est * 1e3:.0f} ms a step at {a.pods})", flush=True)
            for s in ["clean"] + systems:
                res = earlier_clean(a.clean_from, delay, period, steps) if s == "clean" and a.clean_from \
                    else run_job(s, delay, period, int(n), steps, a, work)
                runs.append(res)
                print(line(res), flush=True)
                with open(os.path.join(work, "results.json"), "w") as f:
                    json.dump({"header": header, "runs": runs}, f)
        report(runs, header)
    finally:
        rb.cleanup()
        if a.keep:
            print(f"# run directories kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def earlier_clean(workdir, delay, period, steps):
    """The undisturbed run of (delay, period) over the same steps in an earlier --keep run."""
    with open(os.path.join(workdir, "results.json")) as f:
        runs = json.load(f)["runs"]
    for r in runs:
        if r["system"] == "clean" and (r["delay"], r["period"], r["steps"]) == (delay, period, steps):
            print(f"  clean  S={delay:g}: taken from {r['dir']}", flush=True)
            return r
    sys.exit(f"{workdir}/results.json has no undisturbed run of S={delay:g}, P={period:g}, {steps} steps")


def line(r):
    return (f"  {r['system']:6s} S={r['delay']:<4g} {r['wall']:6.1f} s rc={r['rc']} {r['phase']} round {r['round']} "
            f"charged {r['charges']} losses {len(r['losses'])} resumed {r['resumed']} moves {r['moves']} "
            f"train {rb.fmt(r['train'], '.1f')} s")


def report(runs, header):
    fmt = rb.fmt
    print(f"\n{header}\n")
    print("| S, loss every | system | result | per loss: stood still s (standstills: parts) | mean stood "
          "still s | samples/s vs undisturbed | round | charged r+rec+d | checkpoints read | ranks agree "
          "| loss first differs: step (by) | max loss diff vs undisturbed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for key in sorted({(r["delay"], r["period"]) for r in runs}):
        group = [r for r in runs if (r["delay"], r["period"]) == key]
        clean = next((r for r in group if r["system"] == "clean"), None)
        for r in group:
            s = summarize(r, clean)
            per = "; ".join(f"pod {x['node']}: {x['still']:.2f} ({x['count']}: {', '.join(map(str, x['parts']))})"
                            for x in s["per_loss"]) or "-"
            mean = statistics.mean(x["still"] for x in s["per_loss"]) if s["per_loss"] else None
            ok = "Succeeded" if r["rc"] == 0 and r["phase"] == "Succeeded" else f"FAILED ({r['rc']}, {r['phase']})"
            print(f"| {key[0]:g} s, {key[1]:g} s | {r['system']} | {ok} | {per} | {fmt(mean)} | "
                  f"{fmt(s['ratio'], '.3f') if r['system'] != 'clean' else '1 (' + fmt(r['train'], '.0f') + ' s)'} | "
                  f"{r['round']} | {'+'.join(map(str, r['charges']))} | {r['resumed']} | "
                  f"{'yes' if s['agree'] else 'NO'} | "
                  f"{'%d (%.0e)' % s['first_diff'] if s['first_diff'] else 'never'} | {fmt(s['loss_diff'], '.1e')} |")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        rb.cleanup()
        sys.exit(130)
