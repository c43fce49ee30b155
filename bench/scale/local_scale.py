#!/usr/bin/env python3
"""An InPlace job of N pods in `ddp-operator local` (the real operator, rendezvous pod,
supervisors and LibTorch trainers over Gloo; one tiny minGPT trainer a pod), one pod killed while
it trains: does it heal in round 0 and Succeed, with every rank at the same parameters?

    /usr/bin/python3 bench/scale/local_scale.py --pods 64 [--runs 2] [--steps 40]

Prints per run: the first formation (the operator's start to rank 0's first step), the step time
before the kill, the time training stood still for the kill (rank 0's log), the job's phase,
round, restarts and recoveries, the ranks' checksums, the rendezvous pod's CPU from formation to
the kill and the pods' memory (PSS). Pods here start in milliseconds (local processes): a
cluster's pod start is not in these figures. Python 3 stdlib; the job and log functions are
bench/resilience's.
"""
import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "resilience"))
import local_job as lj  # noqa: E402
import resilience_bench as rb  # noqa: E402

# One tiny trainer a pod: N of them share this machine's cores.
MODEL = ["--n-layer=1", "--n-head=2", "--n-embd=32", "--block-size=32", "--batch-size=4"]


def cpu_seconds(pid):
    """utime + stime of one process, seconds."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


def run_once(a, n, work):
    d = os.path.join(work, f"run-{n}-{int(time.time())}")
    os.makedirs(d)
    job = lj.Job("inplace", d, a, a.steps, pods=n, liveness=a.liveness)
    path = os.path.join(d, "job.yaml")
    with open(path, "w") as f:
        f.write(rb.manifest(job.name, "InPlace", a.steps, a.steps, a.timeout, a.worker, replicas=n,
                            policy=[("livenessTimeoutSeconds", a.liveness)], rendezvous_timeout=600,
                            max_restarts=10, model=MODEL))
    out = open(os.path.join(d, "bench-stdout.txt"), "w")
    t0 = time.time()
    job.t0 = t0
    job.proc = subprocess.Popen([a.operator, "local", "-f", path, "--run-dir", os.path.join(d, "run"), "--plain"],
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    rb.STARTED.append(job.proc)
    res = {"pods": n}
    try:
        if not lj.wait_for(lambda: job.log.update() and job.log.last() >= 1, a.timeout, job):
            res["error"] = "never formed"
            return res
        res["formed_s"] = job.log.steps[0][0] - t0
        rdzv = next((p.pid for p in job.pods() if p.role == "rendezvous"), None)
        cpu0, c0 = cpu_seconds(rdzv) if rdzv else None, time.time()
        kill_at = max(5, a.steps // 3)
        if not lj.wait_for(lambda: job.log.update() and job.log.last() >= kill_at, a.timeout, job):
            res["error"] = f"never reached step {kill_at}"
            return res
        steps = job.log.update()
        recent = [x for x in steps if x[1] >= kill_at - 5]
        res["step_s"] = (recent[-1][0] - recent[0][0]) / max(1, recent[-1][1] - recent[0][1])
        res["pss_gib"] = sum(lj.group_memory(p.pid)["Pss"] for p in job.pods()) / 2**20
        cpu1 = cpu_seconds(rdzv) if rdzv else None
        if cpu0 is not None and cpu1 is not None:  # formed to the kill: steady state
            res["rendezvous_cpu_cores"] = (cpu1 - cpu0) / max(1e-9, time.time() - c0)
        victim = n // 2
        t_kill = time.time()
        if job.signal_pod(victim, signal.SIGKILL) is None:
            res["error"] = f"no pod holds node rank {victim}"
            return res
        lj.wait_for(lambda: job.poll() is not None, a.timeout, None, every=1.0)
        steps = job.log.update()
        res["stall_s"] = lj.stall(steps, t_kill, res["step_s"])
        restarts, recoveries, disruptions, rnd = job.charges()
        res.update(phase=job.phase(), round=rnd, restarts=restarts, recoveries=recoveries,
                   disruptions=disruptions)
        sums = job.checksums()
        res["ranks_finished"] = sum(1 for s in sums.values() if s[0] == a.steps)
        res["checksums"] = len({s[1] for s in sums.values()})
        res["slowdowns"] = job.count_in_logs("group-wide slowdown")
        return res
    finally:
        if job.poll() is None:
            job.stop()
        out.close()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--pods", type=int, nargs="+", default=[64])
    p.add_argument("--runs", type=int, default=1)
    p.add_argument("--steps", type=int, default=40)
    p.add_argument("--liveness", type=int, default=5)
    p.add_argument("--timeout", type=float, default=1200.0, help="per run, seconds")
    p.add_argument("--operator", default=os.path.join(rb.ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(rb.ROOT, "build", "worker", "ddp-worker"))
    a = p.parse_args()
    if any(n < 4 for n in a.pods) or a.runs < 1 or a.steps < 15:
        sys.exit("--pods at least 4, --runs at least 1, --steps at least 15")
    a.checkpoint_every, a.run_timeout = a.steps, a.timeout
    rb.prepare_run(a)
    work = tempfile.mkdtemp(prefix="local-scale-")
    ok = True
    try:
        for n in a.pods:
            for k in range(a.runs):
                r = run_once(a, n, work)
                good = (r.get("phase") == "Succeeded" and r.get("round") == 0 and r.get("restarts") == 0
                        and r.get("checksums") == 1 and r.get("ranks_finished") == n)
                ok = ok and good
                print(f"{n} pods run {k + 1}: " + " ".join(
                    f"{key}={val:.3f}" if isinstance(val, float) else f"{key}={val}" for key, val in r.items())
                    + ("" if good else "  <- NOT healed in round 0"), flush=True)
    finally:
        rb.cleanup()
    print(f"work: {work}")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
