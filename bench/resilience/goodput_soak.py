#!/usr/bin/env python3
"""The goodput the operator reports against the goodput measured from the trainer's own log.

A local InPlace job (the minGPT of resilience_bench.py, CPU/Gloo, 2 pods, one thread per rank,
`--log-every 1`: rank 0 logs every committed step with its millisecond timestamp) runs while
`ddp-operator chaos --run-dir ... FAILURE --every EVERY --for FOR` injects the failure every
EVERY seconds (default: kill-trainer 1 every 60 s for 600 s). At the soak's end the chaos command
prints the job's goodput as ddp_job_goodput_ratio computes it (operator/plan/goodput.h: from
status.startTime, status.goodput and status.incidents). This script measures its own from rank 0's
log and the injection times the chaos command printed, never from the status or the workers'
stall records: from status.startTime to the soak's end, training stood still until rank 0's
first logged step and, at each injection, for the longer of the two gaps between rank 0's
consecutive steps that follow the injection's last step (the step in flight may still commit
after a kill lands); everything else advanced (a step slowed by a busy machine is still a step).
Printed: both, their difference, each injection's stall from the log beside the status's.

Usage (from the repo root, after `make build`):
  bench/resilience/goodput_soak.py [--every 60] [--for 600] [--failure "kill-trainer 1"]
                                   [--keep]
Models local pods (processes start in milliseconds), not a cluster's pod start.
"""
import argparse
import datetime
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OPERATOR = os.path.join(ROOT, "build", "operator", "ddp-operator")
WORKER = os.path.join(ROOT, "build", "worker", "ddp-worker")
STEP = re.compile(r"^I(\d\d)(\d\d) (\d\d):(\d\d):(\d\d)\.(\d{3}) \S+\] step (\d+)/")


def manifest(name, worker):
    return f"""apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata: {{name: {name}}}
spec:
  replicas: 2
  rendezvous: {{timeoutSeconds: 120}}
  failurePolicy: {{recovery: InPlace, maxRestarts: 1000, livenessTimeoutSeconds: 5}}
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: worker
        image: unused
        command: [{worker}]
        args: [--model=mingpt, --dataset=synthetic, --n-layer=4, --n-head=4, --n-embd=128,
               --block-size=64, --batch-size=16, --steps=100000000, --checkpoint-every=100000000,
               --log-every=1, --seed=7, --threads=1]
        env:
        - {{name: OMP_NUM_THREADS, value: "1"}}
"""


def step_times(log, year):
    """(unix seconds, step) of every step rank 0 logged."""
    out = []
    with open(log, errors="replace") as f:
        for line in f:
            m = STEP.match(line)
            if not m:
                continue
            mon, day, hh, mm, ss, ms, step = (int(x) for x in m.groups())
            t = datetime.datetime(year, mon, day, hh, mm, ss, ms * 1000, tzinfo=datetime.timezone.utc)
            out.append((t.timestamp(), step))
    return out


INJECTED = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ) \(\+(\d+) ms\): (?!thawed|uncordoned)")


def injections(chaos_out):
    out = []
    for line in chaos_out.splitlines():
        m = INJECTED.match(line)
        if m:
            t = datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
            out.append(t.timestamp() + int(m.group(2)) / 1000.0)
    return out


def own_goodput(times, start, end, injected):
    """(goodput, stalls): stood still before the first step and, per injection, the longer of
    the two gaps after the last step logged before it."""
    times = [t for t, _ in times if t <= end]
    if len(times) < 3:
        return 0.0, []
    still = times[0] - start
    stalls = []
    for t in injected:
        k = max(i for i in range(len(times)) if times[i] <= t) if times[0] <= t else 0
        gaps = [times[j + 1] - times[j] for j in (k, k + 1) if j + 1 < len(times)]
        if gaps:
            stalls.append((t, max(gaps)))
            still += max(gaps)
    return (end - start - still) / (end - start), stalls


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--every", type=float, default=60)
    p.add_argument("--for", dest="duration", type=float, default=600)
    p.add_argument("--failure", default="kill-trainer 1")
    p.add_argument("--keep", action="store_true")
    a = p.parse_args()
    for binary in (OPERATOR, WORKER):
        if not os.path.exists(binary):
            sys.exit(f"{binary} not built: make build")
    work = tempfile.mkdtemp(prefix="goodput-soak-")
    run = os.path.join(work, "run")
    with open(os.path.join(work, "job.yaml"), "w") as f:
        f.write(manifest("soak", WORKER))
    op = subprocess.Popen([OPERATOR, "local", "-f", os.path.join(work, "job.yaml"), "--run-dir", run,
                           "--plain"], stdout=open(os.path.join(work, "operator.out"), "w"),
                          stderr=subprocess.STDOUT, start_new_session=True)
    try:
        log = os.path.join(run, "soak-worker-0.round0.log")
        deadline = time.time() + 300
        while time.time() < deadline:
            if os.path.exists(log) and len(step_times(log, datetime.datetime.utcnow().year)) > 20:
                break
            time.sleep(1)
        else:
            sys.exit("the job did not start training within 300 s; see " + work)
        chaos = subprocess.run([OPERATOR, "chaos", "--run-dir", run] + a.failure.split() +
                               ["--every", str(a.every), "--for", str(a.duration), "--timeout", "50",
                                "--svg", os.path.join(work, "soak.svg")],
                               capture_output=True, text=True)
        end = time.time()
        print(chaos.stdout)
        if chaos.returncode != 0:
            print(chaos.stderr)
        reported = re.search(r"^goodput ([0-9.]+)", chaos.stdout, re.M)
        with open(os.path.join(run, "status.json")) as f:
            status = json.load(f)["status"]
        start = datetime.datetime.strptime(status["startTime"], "%Y-%m-%dT%H:%M:%SZ").replace(
            tzinfo=datetime.timezone.utc).timestamp()
        own, stalls = own_goodput(step_times(log, datetime.datetime.utcnow().year), start, end,
                                  injections(chaos.stdout))
        print(f"soak: {a.failure} every {a.every:.0f} s for {a.duration:.0f} s; job started "
              f"{status['startTime']}, soak ended {end - start:.1f} s later")
        print("stall per injection from rank 0's log: " + ", ".join(f"{g:.2f} s" for _, g in stalls))
        print("stall per incident in the status:      " + ", ".join(
            f"{i['stallSeconds']:.2f} s" for i in status.get("incidents", []) if "stallSeconds" in i))
        print(f"goodput: operator (ddp_job_goodput_ratio's formula) "
              f"{reported.group(1) if reported else 'n/a'}, rank 0's log {own:.4f}, difference "
              f"{abs(float(reported.group(1)) - own):.4f}" if reported else f"goodput: log {own:.4f}")
        print(f"work dir: {work} (timeline: soak.svg)")
    finally:
        os.killpg(op.pid, signal.SIGINT)
        try:
            op.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(op.pid, signal.SIGKILL)
        if not a.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
