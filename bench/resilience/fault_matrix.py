#!/usr/bin/python3
"""Fault matrix: one job of 3 pods per fault kind, each fault injected from outside as a cluster
delivers it, under InPlace, Restart and the torchrun peer (systems: local_job.py).

Kinds (pod N = the pod that holds node rank N when the fault comes; injected once rank 0 has
logged a third of the steps, except kill-every):
  kill-trainer-0, kill-trainer-1   SIGKILL of rank 0's / rank 1's trainer process
  kill-pod-0, kill-pod-1           SIGKILL of pod 0's / pod 1's process group (the whole pod)
  term-pod-1                       SIGTERM to pod 1's process group (a drain, an eviction)
  kill-two                         SIGKILL of rank 1's and rank 2's trainers at once
  kill-in-heal                     rank 1's trainer killed, then a second failure during the heal:
                                   InPlace: rank 0 is killed as it is about to heal it
                                   (DDP_FAULT=0:0@0:kill-in-heal, the one fault that cannot come
                                   from outside); Restart, torchrun: rank 0's new process is killed
                                   as soon as it exists (while the group restarts)
  freeze-pod-1                     SIGSTOP of pod 1's process group (a silent node), SIGKILL of it
                                   --freeze-seconds later unless it is gone by then
  kill-every                       SIGKILL of a random trainer every --kill-every seconds, the
                                   whole run (only while every trainer is up)
Under Restart a pod is its trainer process, and torchrun has no pods (a "pod" is a worker), so
kill-pod-N is the same fault as kill-trainer-N there and runs only for InPlace.

Per system, fault-free runs come first and last (drift). Per kind and system: Succeeded or not;
failures injected; the charges (restarts + recoveries + disruptions, from status.json; torchrun:
its worker-group restarts) against those expected (one per failure; under Restart and torchrun
one per new round: two failures at once are one round); the round (InPlace: 0 = never a new
round); every rank's final param_checksum against the fault-free run's; and the cost:
  wall/fault   (wall time - mean fault-free wall time) / failures: launch to exit, drift included
  lost/fault   (rank 0's time off its normal pace - the fault-free runs' mean) / failures, where
               time off pace = (last step time - first step time) - steps advanced x the run's
               normal step (resilience_bench.py's normal_step): stalls and replayed steps, not
               start-up, and not the machine's speed
  stall        per recovery (faults after the same last step L are one): how late rank 0's
               first step >= L + 2 came against L's time + 2 normal steps.

  bench/resilience/fault_matrix.py                       # all kinds and systems (~20 min idle)
  bench/resilience/fault_matrix.py --quick               # 60 steps, InPlace and Restart
  bench/resilience/fault_matrix.py --kinds kill-pod-0,freeze-pod-1 --systems inplace --steps 200
  bench/resilience/fault_matrix.py --report DIR          # the tables again from a --keep run
"""
import argparse
import datetime
import json
import os
import random
import shutil
import signal
import sys
import tempfile
import time

import local_job as lj
import resilience_bench as rb

KINDS = ("kill-trainer-0", "kill-trainer-1", "kill-pod-0", "kill-pod-1", "term-pod-1", "kill-two",
         "kill-in-heal", "freeze-pod-1", "kill-every")
HEAL_FAULT = "0:0@0:kill-in-heal"


def applies(kind, system):
    return system == "inplace" or not kind.startswith("kill-pod")


def expected_charges(kind, system, failures):
    if kind == "kill-two" and system != "inplace":
        return 1  # both in one round
    return failures


class Injector:
    """One kind's faults: fire() once rank 0 reached the trigger step, then tick() every poll.
    events: [(time, failures)]; notes: what the bench saw."""

    def __init__(self, kind, job, a, rng):
        self.kind, self.job, self.a, self.rng = kind, job, a, rng
        self.events, self.notes = [], []
        self.pending = None  # what tick() still has to do
        self.fired = False

    def trigger_step(self):
        return 5 if self.kind == "kill-every" else max(2, self.job.steps // 3)

    def fire(self, now):
        j, k = self.job, self.kind
        if k.startswith("kill-trainer-"):
            ok = j.kill_trainer(int(k[-1]))
        elif k.startswith("kill-pod-"):
            ok = j.signal_pod(int(k[-1]), signal.SIGKILL)
        elif k == "term-pod-1":
            ok = j.signal_pod(1, signal.SIGTERM)
        elif k == "kill-two":
            tr = j.trainers()
            ok = len(tr) == j.n and lj._signal(tr[1], signal.SIGKILL, False) and \
                lj._signal(tr[2], signal.SIGKILL, False)
        elif k == "kill-in-heal":
            old0 = j.trainers().get(0)
            ok = j.kill_trainer(1)
            if ok and j.system != "inplace":
                self.pending = ("second", old0)
        elif k == "freeze-pod-1":
            ok = j.signal_pod(1, signal.SIGSTOP)
            if ok:
                self.pending = ("thaw-kill", ok, now + self.a.freeze_seconds)
        else:  # kill-every
            self.pending = ("every", now)
            ok = True
        if not ok:
            return False
        self.fired = True
        if k != "kill-every":
            n = 2 if k == "kill-two" or (k == "kill-in-heal" and j.system == "inplace") else 1
            self.events.append((now, n))
        return True

    def tick(self, now):
        if not self.pending:
            return
        j, what = self.job, self.pending[0]
        if what == "second":
            pid = j.trainers().get(0)
            if pid and pid != self.pending[1] and lj._signal(pid, signal.SIGKILL, False):
                self.events.append((now, 1))
                self.notes.append(f"second kill {now - self.events[0][0]:.1f}s after the first")
                self.pending = None
        elif what == "thaw-kill":
            pgid, at = self.pending[1], self.pending[2]
            alive = _group_alive(pgid, j.system)
            if not alive:
                self.notes.append(f"frozen pod gone {now - self.events[0][0]:.1f}s after the freeze "
                                  f"(not by the bench)")
                self.pending = None
            elif now >= at:
                lj._signal(pgid, signal.SIGKILL, j.system != "torchrun")
                self.notes.append(f"frozen pod killed by the bench after {self.a.freeze_seconds:g}s")
                self.pending = None
        elif what == "every" and now >= self.pending[1]:
            tr = j.trainers()
            if len(tr) == j.n:
                rank = self.rng.choice(sorted(tr))
                if lj._signal(tr[rank], signal.SIGKILL, False):
                    self.events.append((now, 1))
                    self.pending = ("every", now + self.a.kill_every)


def _group_alive(pid, system):
    try:
        (os.kill if system == "torchrun" else os.killpg)(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def run_one(system, kind, work, steps, a, rng, timeout):
    """One job; kind None = fault-free. Returns the run's record (a dict, JSON-ready)."""
    tag = kind or "clean"
    d = os.path.join(work, f"{system}-{tag}-{int(time.time() * 1000) % 100000}")
    env = [("DDP_FAULT", HEAL_FAULT)] if kind == "kill-in-heal" and system == "inplace" else []
    job = lj.Job(system, d, a, steps, pods=3, env=env, liveness=a.liveness, rendezvous_timeout=60)
    inj = Injector(kind, job, a, rng) if kind else None
    job.start()
    rc = None
    while rc is None:
        now = time.time()
        if job.expired(timeout, f"{system} {tag}"):
            rc = "timeout"
            break
        job.log.update()
        if inj and not inj.fired and job.log.last() >= inj.trigger_step():
            inj.fire(now)
        elif inj:
            inj.tick(now)
        time.sleep(0.1)
        rc = job.poll()
    wall = time.time() - job.t0
    steps_log = job.log.update()
    ns = rb.normal_step(steps_log)
    events = inj.events if inj else []
    r, rec, dis, rnd = job.charges()
    failures = sum(n for _, n in events)
    notes = list(inj.notes) if inj else []
    stalls, seen = [], set()  # one per recovery: faults after the same last step are one
    for t, _ in events:
        before = job.log.until(t)
        if (before or (0, 0))[1] not in seen:
            seen.add((before or (0, 0))[1])
            stalls.append(lj.stall(steps_log, t, ns))
    if kind == "kill-in-heal" and system == "inplace":
        if job.count_in_logs("while it heals") == 0:
            failures -= 1
            notes.append("DDP_FAULT kill-in-heal did not fire")
    if system == "inplace":
        stalled = job.count_in_logs(": stalled")
        if stalled:
            notes.append(f"{stalled} trainer(s) declared stalled by the group")
        with open(os.path.join(d, "bench-stdout.txt"), errors="replace") as f:
            if any("replacing rendezvous pod" in x for x in f):
                notes.append("the rendezvous pod was replaced (the bench never touches it)")
    return {
        "system": system, "kind": tag, "rc": rc, "wall": wall, "phase": job.phase(), "steps": steps,
        "failures": failures, "events": events, "charges": [r, rec, dis], "round": rnd,
        "expected": expected_charges(kind, system, failures) if kind else 0,
        "sums": {str(k): v for k, v in job.checksums().items()}, "normal_step": ns,
        "lost": lj.lost_time(steps_log, ns), "stalls": stalls,
        "notes": notes, "dir": d,
    }


def line(res):
    c = res["charges"]
    sums = res["sums"]
    return (f"  {res['system']:8s} {res['kind']:15s} {res['wall']:6.1f} s  rc={res['rc']} {res['phase']}  "
            f"failures {res['failures']}  charged {c[0]}+{c[1]}+{c[2]}={sum(c)} (round {res['round']})  "
            f"checksums {sorted(set(v[1] for v in sums.values()))}  {'; '.join(res['notes'])}")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", default="inplace,restart,torchrun")
    p.add_argument("--kinds", default=",".join(KINDS))
    p.add_argument("--steps", type=int, default=0,
                   help="0 = calibrate: a fault-free run trains about --train-seconds")
    p.add_argument("--train-seconds", type=float, default=40.0)
    p.add_argument("--checkpoint-every", type=int, default=20,
                   help="steps (Restart's fallback, torchrun's snapshots)")
    p.add_argument("--liveness", type=int, default=5, help="livenessTimeoutSeconds (InPlace)")
    p.add_argument("--freeze-seconds", type=float, default=15.0, help="freeze-pod-1: SIGKILL this long after SIGSTOP")
    p.add_argument("--kill-every", type=float, default=8.0, help="kill-every: seconds between kills")
    p.add_argument("--run-timeout", type=float, default=600.0, help="hard limit per run, seconds")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--retries", type=int, default=1, choices=(0, 1),
                   help="run a job again once when its charges differ from those expected")
    p.add_argument("--quick", action="store_true", help="smoke test: 60 steps, InPlace and Restart")
    p.add_argument("--keep", action="store_true")
    p.add_argument("--operator", default=os.path.join(rb.ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(rb.ROOT, "build", "worker", "ddp-worker"))
    p.add_argument("--report", metavar="WORKDIR", help="print the tables of a --keep run, running nothing")
    a = p.parse_args()
    if a.report:
        with open(os.path.join(a.report, "results.json")) as f:
            saved = json.load(f)
        report(saved["runs"], saved["header"])
        return
    if a.quick:
        a.steps, a.systems, a.kill_every = a.steps or 60, "inplace,restart", 5.0
    systems = [s for s in a.systems.split(",") if s]
    kinds = [k for k in a.kinds.split(",") if k]
    bad = [s for s in systems if s not in lj.SYSTEMS] + [k for k in kinds if k not in KINDS]
    if bad:
        sys.exit(f"unknown system or kind: {', '.join(bad)} (systems {lj.SYSTEMS}, kinds {KINDS})")
    rb.prepare_run(a)
    work = tempfile.mkdtemp(prefix="fault-matrix-")
    runs = []
    try:
        steps = a.steps
        note = ""
        if steps <= 0:
            st = rb.calibrate(a, ranks=3)
            steps = max(60, int(a.train_seconds / st) // 10 * 10)
            note = f"calibration: 3-rank step {st * 1e3:.0f} ms -> {steps} steps; "
        header = (f"fault matrix {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ} nproc={os.cpu_count()}: minGPT L4 H4 "
                  f"C128 T64, batch 16/rank, 3 pods x 1 rank, CPU/Gloo, 1 thread, {steps} steps, checkpoint every "
                  f"{a.checkpoint_every}; {note}InPlace livenessTimeoutSeconds {a.liveness}; freeze "
                  f"{a.freeze_seconds:g} s; kill-every {a.kill_every:g} s; seed {a.seed}; maxRestarts 10000")
        print(f"# {header}\n# work dir {work}", flush=True)
        rng = random.Random(a.seed)

        def record(res):
            runs.append(res)
            print(line(res), flush=True)
            with open(os.path.join(work, "results.json"), "w") as f:
                json.dump({"header": header, "runs": runs}, f, indent=1)

        def attempt(s, kind, timeout):
            """A run whose charges differ from those expected runs once more (something outside
            the bench may have killed a process); both are recorded."""
            res = run_one(s, kind, work, steps, a, rng, timeout)
            if a.retries and res["rc"] != "timeout" and sum(res["charges"]) != res["expected"]:
                res["notes"].append("charges differ from those expected: run again (next row)")
                record(res)
                res = run_one(s, kind, work, steps, a, rng, timeout)
                res["notes"].append("second attempt")
            record(res)
            return res

        clean_wall = {}
        for s in systems:
            clean_wall[s] = attempt(s, None, a.run_timeout)["wall"]
        for i, kind in enumerate(kinds):
            for s in (systems if i % 2 == 0 else systems[::-1]):  # alternate who runs first
                if applies(kind, s):
                    attempt(s, kind, min(a.run_timeout, 3 * clean_wall[s] + 60 + a.freeze_seconds))
        for s in systems[::-1]:
            attempt(s, None, a.run_timeout)
        report(runs, header)
    finally:
        rb.cleanup()
        if a.keep:
            print(f"# run directories kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(runs, header):
    fmt = rb.fmt
    print(f"\n{header}\n")
    clean = {}
    for r in runs:
        if r["kind"] == "clean" and sum(r["charges"]) == 0:
            clean.setdefault(r["system"], []).append(r)
    print("| system | fault-free wall s (before / after) | drift | normal step ms | time off pace s | checksum |")
    print("|---|---|---|---|---|---|")
    ref = {}
    for s, rs in clean.items():
        walls = [x["wall"] for x in rs]
        sums = sorted({v[1] for x in rs for v in x["sums"].values()})
        ref[s] = {"wall": sum(walls) / len(walls), "sum": sums[0] if len(sums) == 1 else None,
                  "lost": _mean([x["lost"] for x in rs])}
        drift = (walls[-1] - walls[0]) / ref[s]["wall"] if len(walls) > 1 else None
        print(f"| {s} | {' / '.join(f'{w:.1f}' for w in walls)} | {fmt(drift and drift * 100, '+.1f')}% | "
              f"{' / '.join(fmt(x['normal_step'] and x['normal_step'] * 1e3, '.0f') for x in rs)} | "
              f"{' / '.join(fmt(x['lost'], '.1f') for x in rs)} | {', '.join(sums) or '-'} |")
    print("\n| kind | system | result | failures | charged r+rec+d (expected) | round | wall/fault s "
          "| lost/fault s | stall per recovery s | every rank = fault-free | notes |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    for r in runs:
        if r["kind"] == "clean":
            if sum(r["charges"]):
                print(f"| clean | {r['system']} | disturbed: charged {r['charges']} | {'; '.join(r['notes'])} |")
            continue
        c, base, n = r["charges"], ref.get(r["system"], {}), r["failures"]
        ok = r["rc"] == 0 and r["phase"] == "Succeeded"
        wall = (r["wall"] - base["wall"]) / n if ok and n and base else None
        lost = (r["lost"] - base["lost"]) / n if ok and n and base and r["lost"] is not None and \
            base["lost"] is not None else None
        sums = r["sums"]
        same = len(sums) == 3 and all(v[0] == r["steps"] and v[1] == base.get("sum") for v in sums.values())
        charged = f"{c[0]}+{c[1]}+{c[2]} = {sum(c)} ({r['expected']})" + ("" if sum(c) == r["expected"] else " **")
        print(f"| {r['kind']} | {r['system']} | {'Succeeded' if ok else 'FAILED ' + str(r['rc'])} | {n} | {charged} "
              f"| {r['round']} | {fmt(wall, '.1f')} | {fmt(lost, '.2f')} | "
              f"{', '.join(fmt(x, '.2f') for x in r['stalls']) or '-'} | {'yes' if same else 'NO'} | "
              f"{'; '.join(r['notes'])} |")


def _mean(vals):
    v = [x for x in vals if x is not None]
    return sum(v) / len(v) if v else None


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        rb.cleanup()
        sys.exit(130)
