#!/usr/bin/python3
"""Resilience benchmark: goodput under process and pod kills, side by side in one run.

Systems (the same minGPT: 4 layers, 4 heads, width 128, block 64, batch 16 per rank; 2 ranks on
CPU/Gloo, 1 thread per rank; a checkpoint every 100 steps):
  inplace   ddp-operator local + ddp-worker, spec.failurePolicy.recovery: InPlace
  restart   ddp-operator local + ddp-worker, recovery: Restart (new round from the checkpoint,
            after the survivors' just-in-time checkpoint)
  torchrun  /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node 2
            --max_restarts N --redirects 1 --tee 1 around torch_train.py (Python DDP, rank 0
            checkpoints every 100 steps, every rank resumes from it; torchrun restarts all workers)

For each system: a fault-free run, then a run with faults: SIGKILL of a random trainer process
(a rank's training process; for InPlace the supervisor's child, for Restart the pod process, for
torchrun one of the agent's workers) every P seconds, and, for the two ddp-operator systems, of
a whole non-zero pod (its top process: the supervisor under InPlace) every Q seconds (0 = off).
Kill times are counted from the start of the run (pod kills offset by P/2, so that the two
never coincide: both at once in a 2-rank group lose every member, which only a checkpoint can
heal); a kill that finds no target (a group in the middle of a restart) is retried every 0.2 s.

Printed per system: fault-free and faulty wall time (launch to exit), kills, goodput =
fault-free / faulty, goodput ratio vs torchrun, recovery time, and whether the final parameter
checksums of the ranks agree (and equal the fault-free run's). A shared machine's speed drifts
by 5-10% between two runs minutes apart, as much as ten kills cost; so the table also gives each
run's normal step time (the mean time between rank 0's consecutive steps, recovery gaps longer
than 3x the median left out: the machine's speed then) and a speed-corrected goodput = goodput x
(faulty normal step / fault-free normal step), the time the faulty run's machine would have
needed without faults over the faulty wall time.

Recovery time, measured the same way for every system from rank 0's per-step log (every run logs
every step with a timestamp): from the kill to the first logged step numbered at least two above
the last step rank 0 logged before the kill (the step in flight, plus one whole new step). It
includes detection, restart, rendezvous, heal or checkpoint load, and the replay of lost steps.
For ddp-worker the worker's own figure (`rank R: recovered in Xs`, failure to the group's next
committed step, the max over the ranks for each kill) is printed as well ("worker-reported").

Needs: build/operator/ddp-operator and build/worker/ddp-worker (Release), /usr/bin/python3 with
torch. Python 3 stdlib only here. Every run has a hard timeout (--run-timeout); everything the
bench started is killed on exit, Ctrl-C included.

  bench/resilience/resilience_bench.py                 # defaults: P=20 s, Q=0, auto steps
  bench/resilience/resilience_bench.py --quick         # smoke test: 300 steps, P=6 s, Q=15 s
  bench/resilience/resilience_bench.py --steps 3000 --kill-every 20 --pod-kill-every 45
  bench/resilience/resilience_bench.py --report /tmp/resilience-bench-XXXX   # a kept run's table

--steps 0 (default) calibrates: a 40-step ddp-worker run measures the step time on this machine
now, and the step count is chosen so that the fault-free run lasts (--min-kills + 0.5) * P.
"""
import argparse
import datetime
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
PY = "/usr/bin/python3"  # the interpreter that has torch
MODEL = ["--n-layer=4", "--n-head=4", "--n-embd=128", "--block-size=64", "--batch-size=16"]
STARTED = []  # Popen objects of every top-level process we started


# ---------------------------------------------------------------- processes

def children_map():
    kids = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            ppid = int(stat[stat.rindex(")") + 2:].split()[1])
        except (OSError, ValueError):
            continue
        kids.setdefault(ppid, []).append(int(d))
    return kids


def descendants(pid, kids=None):
    kids = kids if kids is not None else children_map()
    out, todo = [], [pid]
    while todo:
        for c in kids.get(todo.pop(), []):
            out.append(c)
            todo.append(c)
    return out


def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return [x.decode(errors="replace") for x in f.read().split(b"\0") if x]
    except OSError:
        return []


def comm(pid):
    try:
        with open(f"/proc/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def environ(pid):
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            pairs = [x.decode(errors="replace").split("=", 1) for x in f.read().split(b"\0") if b"=" in x]
        return dict(pairs)
    except OSError:
        return {}


def kill_tree(proc):
    """SIGKILL a started process and everything below it (pods are their own process groups)."""
    if proc.poll() is None:
        pids = descendants(proc.pid)
        for p in [proc.pid] + pids:
            try:
                os.kill(p, signal.SIGKILL)
            except ProcessLookupError:
                pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    # Stragglers re-parented to init (a pod group whose parent died first).
    for p in descendants(proc.pid):
        try:
            os.kill(p, signal.SIGKILL)
        except ProcessLookupError:
            pass


def cleanup(*_):
    signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second signal must not cut the cleanup short
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for proc in STARTED:
        kill_tree(proc)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- systems

def manifest(name, recovery, steps, ckpt_every, timeout, worker, replicas=2, policy=(), env=(),
             rendezvous_timeout=60, max_restarts=10000, elastic=None, model=MODEL,
             extra_args=()):
    """The bench's DDPJob. `policy`: extra failurePolicy fields as (key, value); `env`: extra
    container env as (name, value) (fault_matrix.py and spares_bench.py use both); `elastic`:
    (minReplicas, maxReplicas) or None (resize_bench.py); `model`: the minGPT's size flags
    (bench/scale/local_scale.py's is tinier); `extra_args`: more ddp-worker flags, after the
    bench's (later flags win: shrink_bench.py)."""
    args = ["--model=mingpt", *model, f"--steps={steps}", "--log-every=1",
            f"--checkpoint-every={ckpt_every}", "--threads=1", "--device=cpu", "--seed=42",
            *extra_args]
    policy_lines = "".join(f"\n    {k}: {v}" for k, v in policy)
    env_lines = "".join(f'\n            - name: {k}\n              value: "{v}"' for k, v in env)
    elastic_lines = f"\n  elastic:\n    minReplicas: {elastic[0]}\n    maxReplicas: {elastic[1]}" if elastic else ""
    return f"""apiVersion: ddp.dev/v1alpha1
kind: DDPJob
metadata:
  name: {name}
spec:
  replicas: {replicas}{elastic_lines}
  failurePolicy:
    restartPolicy: ExitCode
    maxRestarts: {max_restarts}
    retryableExitCodes: [75]
    recovery: {recovery}{policy_lines}
  runPolicy:
    activeDeadlineSeconds: {int(timeout)}
  rendezvous:
    timeoutSeconds: {int(rendezvous_timeout)}
  template:
    spec:
      terminationGracePeriodSeconds: 5
      containers:
        - name: worker
          image: ddp-worker:0.1.0
          command: [{worker}]
          args: [{", ".join(args)}]
          env:
            - name: OMP_NUM_THREADS
              value: "1"{env_lines}
"""


class System:
    def __init__(self, name, a):
        self.name, self.a = name, a

    def start(self, run_dir, steps):
        os.makedirs(run_dir)
        self.run_dir = run_dir
        out = open(os.path.join(run_dir, "bench-stdout.txt"), "w")
        if self.name == "torchrun":
            cmd = [PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
                   "--max_restarts", "10000", "--redirects", "1", "--tee", "1",
                   "--log_dir", os.path.join(run_dir, "torchrun-logs"),
                   os.path.join(HERE, "torch_train.py"), "--steps", str(steps),
                   "--checkpoint-every", str(self.a.checkpoint_every), "--threads", "1",
                   "--snapshot", os.path.join(run_dir, "snapshot.pt")]
            env = dict(os.environ, OMP_NUM_THREADS="1")
        else:
            recovery = "InPlace" if self.name == "inplace" else "Restart"
            path = os.path.join(run_dir, "job.yaml")
            with open(path, "w") as f:
                f.write(manifest(f"rb-{self.name}", recovery, steps, self.a.checkpoint_every,
                                 self.a.run_timeout, self.a.worker))
            cmd = [self.a.operator, "local", "-f", path, "--run-dir", os.path.join(run_dir, "run"),
                   "--plain"]
            env = dict(os.environ)
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env,
                                     start_new_session=True)
        STARTED.append(self.proc)
        return self.proc

    def trainers(self):
        """PIDs of the live training processes (leaf processes doing the training)."""
        kids = children_map()
        out = []
        for p in descendants(self.proc.pid, kids):
            cl = cmdline(p)
            if not cl:
                continue
            if self.name == "torchrun":
                if any(x.endswith("torch_train.py") for x in cl) and "RANK" in environ(p) and \
                        "torch.distributed.run" not in cl:
                    out.append(p)
            elif self.name == "inplace":
                # The supervisor's child; a fresh supervisor without its child yet is no trainer,
                # and neither is a warm standby waiting to replace one (its name says so).
                if cl[0].endswith("ddp-worker") and environ(p).get("DDP_SUPERVISED") == "1" and \
                        comm(p) != "ddp-standby":
                    out.append(p)
            elif cl[0].endswith("ddp-worker"):  # Restart: the pod's process is the trainer
                out.append(p)
        return out

    def pods(self):
        """{pod index: top process of the pod} for the ddp-operator systems."""
        out = {}
        for p in children_map().get(self.proc.pid, []):
            env = environ(p)
            idx = env.get("NODE_RANK", env.get("RANK"))
            if idx is not None and cmdline(p)[:1] and cmdline(p)[0].endswith("ddp-worker"):
                out[int(idx)] = p
        return out


# ---------------------------------------------------------------- logs

STEP_DDP = re.compile(r"^I(\d{4}) (\d\d:\d\d:\d\d\.\d+) \S+\] step (\d+)/\d+ ")
RECOVERED = re.compile(r"^I(\d{4}) (\d\d:\d\d:\d\d\.\d+) \S+\] rank (\d+): recovered in ([0-9.eE+-]+)s")
SUMMARY = re.compile(r"summary rank=(\d+) .*?step=(\d+) .*param_checksum=(\S+)")
STEP_TORCH = re.compile(r"step (\d+) t=([0-9.]+)")
FINAL_TORCH = re.compile(r"final rank=(\d+) step=(\d+) param_checksum=(\S+)")


def glog_time(mmdd, hms):
    year = datetime.datetime.now().year
    dt = datetime.datetime.strptime(f"{year}{mmdd} {hms}", "%Y%m%d %H:%M:%S.%f")
    return dt.timestamp()  # glog stamps are local time, as is time.time()'s reading here


def parse_run(system, run_dir):
    """(steps: [(t, step)] of rank 0, recovered: [(t, rank, s)], checksums: {rank: (step, sum)})."""
    steps, recovered, sums = [], [], {}
    if system == "torchrun":
        files = [os.path.join(run_dir, "bench-stdout.txt")]
    else:
        d = os.path.join(run_dir, "run")
        files = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log")] if os.path.isdir(d) else []
    for path in sorted(files, key=os.path.getmtime):
        with open(path, errors="replace") as f:
            for line in f:
                if system == "torchrun":
                    m = STEP_TORCH.search(line)  # only rank 0 prints step lines
                    if m:
                        steps.append((float(m.group(2)), int(m.group(1))))
                    m = FINAL_TORCH.search(line)
                    if m:
                        sums[int(m.group(1))] = (int(m.group(2)), m.group(3))
                    continue
                m = STEP_DDP.match(line)
                if m:
                    steps.append((glog_time(m.group(1), m.group(2)), int(m.group(3))))
                m = RECOVERED.match(line)
                if m:
                    recovered.append((glog_time(m.group(1), m.group(2)), int(m.group(3)), float(m.group(4))))
                m = SUMMARY.search(line)
                if m:
                    sums[int(m.group(1))] = (int(m.group(2)), m.group(3))
    steps.sort()
    return steps, recovered, sums


def recovery_times(kills, steps):
    """Per kill: seconds from the kill to rank 0's first logged step >= (last step before) + 2."""
    out = []
    for k in kills:
        before = [s for t, s in steps if t <= k]
        last = max(before) if before else 0
        after = [t for t, s in steps if t > k and s >= last + 2]
        out.append(min(after) - k if after else None)
    return out


def normal_step(steps):
    """Mean seconds between rank 0's consecutive steps (n, n+1), leaving out the gaps longer than
    3x the median (a recovery): the machine's speed in that run."""
    iv = sorted(b[0] - a[0] for a, b in zip(steps, steps[1:]) if b[1] == a[1] + 1 and b[0] > a[0])
    if not iv:
        return None
    normal = [x for x in iv if x <= 3 * iv[len(iv) // 2]]
    return sum(normal) / len(normal)


def worker_reported(kills, recovered):
    """Per kill: the max `recovered in` over the ranks among the lines logged before the next kill."""
    out = []
    for i, k in enumerate(kills):
        nxt = kills[i + 1] if i + 1 < len(kills) else float("inf")
        vals = [s for t, _, s in recovered if k < t <= nxt]
        out.append(max(vals) if vals else None)
    return out


# ---------------------------------------------------------------- one run

def run_once(sysobj, run_dir, steps, a, faulty, rng):
    """Runs one job to completion; returns dict(wall, rc, kills=[(t, kind, pid)])."""
    t0 = time.time()
    proc = sysobj.start(run_dir, steps)
    kills = []
    next_p = t0 + a.kill_every if faulty and a.kill_every > 0 else float("inf")
    pod_kills = faulty and a.pod_kill_every > 0 and sysobj.name != "torchrun"
    offset = a.pod_kill_offset if a.pod_kill_offset >= 0 else a.kill_every / 2
    next_q = t0 + a.pod_kill_every + offset if pod_kills else float("inf")
    deadline = t0 + a.run_timeout
    rc = None
    while True:
        rc = proc.poll()
        if rc is not None:
            break
        now = time.time()
        if now > deadline:
            print(f"  ! {sysobj.name}: hard timeout after {a.run_timeout:.0f} s: killing it", flush=True)
            kill_tree(proc)
            rc = "timeout"
            break
        if now >= next_q:
            pods = {i: p for i, p in sysobj.pods().items() if i != 0}
            if pods:
                idx = rng.choice(sorted(pods))
                try:
                    os.kill(pods[idx], signal.SIGKILL)
                    kills.append((time.time(), f"pod{idx}", pods[idx]))
                    next_q += a.pod_kill_every
                    while next_q <= time.time():
                        next_q += a.pod_kill_every
                except ProcessLookupError:
                    pass
        elif now >= next_p:
            tr = sysobj.trainers()
            if len(tr) == 2:  # the whole group is up (not in the middle of a restart)
                pid = rng.choice(sorted(tr))
                rank = environ(pid).get("RANK", "?")
                try:
                    os.kill(pid, signal.SIGKILL)
                    kills.append((time.time(), f"rank{rank}", pid))
                    next_p += a.kill_every
                    while next_p <= time.time():
                        next_p += a.kill_every
                except ProcessLookupError:
                    pass
        time.sleep(0.2)
    wall = time.time() - t0
    return {"wall": wall, "rc": rc, "kills": kills}


def calibrate(a, ranks=2):
    """Step time (s) of a 40-step ddp-worker run of `ranks` ranks, no operator (the machine as it
    is now)."""
    port = free_port()
    tmp = tempfile.mkdtemp(prefix="rb-cal-")
    procs = []
    for r in reversed(range(ranks)):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(ranks), RANK=str(r),
                   OMP_NUM_THREADS="1")
        env.pop("DDP_RECOVERY", None)
        p = subprocess.Popen([a.worker, "--model=mingpt", *MODEL, "--steps=40", "--threads=1", "--device=cpu",
                              "--log-every=1000"], env=env, stdout=open(os.path.join(tmp, f"w{r}.out"), "w"),
                             stderr=subprocess.STDOUT, start_new_session=True)
        STARTED.append(p)
        procs.append(p)
    for p in procs:
        try:
            p.wait(timeout=300)
        except subprocess.TimeoutExpired:
            kill_tree(p)
    with open(os.path.join(tmp, "w0.out")) as f:
        m = re.search(r"summary .* step_ms=([0-9.]+)", f.read())
    shutil.rmtree(tmp, ignore_errors=True)
    if not m:
        sys.exit("calibration run failed (no summary line from ddp-worker)")
    return float(m.group(1)) / 1000.0


def fmt(x, spec=".2f"):
    return "-" if x is None else format(x, spec)


def stats(vals):
    v = [x for x in vals if x is not None]
    missing = len(vals) - len(v)
    if not v:
        return None, None, missing
    return sum(v) / len(v), max(v), missing



def prepare_run(a):
    """What every bench of this folder does before running: the binaries exist, and a SIGTERM
    ends the run through its cleanup (finally: rb.cleanup())."""
    for b in (a.operator, a.worker):
        if not os.access(b, os.X_OK):
            sys.exit(f"not found or not executable: {b} (build it first)")

    def on_term(*_):
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        raise SystemExit(143)
    signal.signal(signal.SIGTERM, on_term)

def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--systems", default="inplace,restart,torchrun")
    p.add_argument("--steps", type=int, default=0, help="0 = calibrate (see the header)")
    p.add_argument("--min-kills", type=int, default=10, help="for --steps 0: kills the fault-free length allows")
    p.add_argument("--kill-every", type=float, default=20.0, help="P: seconds between trainer kills (0 = off)")
    p.add_argument("--pod-kill-every", type=float, default=0.0, help="Q: seconds between pod kills (0 = off)")
    p.add_argument("--pod-kill-offset", type=float, default=-1.0,
                   help="seconds added to every pod kill time (default P/2: a pod kill never lands on a "
                        "trainer kill, which in a 2-rank group would lose every member at once)")
    p.add_argument("--checkpoint-every", type=int, default=100)
    p.add_argument("--run-timeout", type=float, default=1800.0, help="hard limit per run, seconds")
    p.add_argument("--seed", type=int, default=1, help="seed of the random kill targets")
    p.add_argument("--quick", action="store_true", help="smoke test: 300 steps, P=6, Q=15, timeout 300")
    p.add_argument("--keep", action="store_true", help="keep the run directories (printed)")
    p.add_argument("--operator", default=os.path.join(ROOT, "build", "operator", "ddp-operator"))
    p.add_argument("--worker", default=os.path.join(ROOT, "build", "worker", "ddp-worker"))
    p.add_argument("--report", metavar="WORKDIR", help="print the table again from a run kept with --keep "
                   "(its results.json and run directories), running nothing")
    a = p.parse_args()
    if a.report:
        with open(os.path.join(a.report, "results.json")) as f:
            saved = json.load(f)
        for name, runs in saved["results"].items():
            for tag, out in runs.items():
                st, _, _ = parse_run(name, os.path.join(a.report, f"{name}-{tag}"))
                out["normal_step"] = normal_step(st)
        report(saved["results"], list(saved["results"]), saved["steps"])
        return
    if a.quick:
        a.steps, a.kill_every, a.pod_kill_every, a.run_timeout = a.steps or 300, 6.0, 15.0, 300.0
    systems = [s for s in a.systems.split(",") if s]
    for s in systems:
        if s not in ("inplace", "restart", "torchrun"):
            sys.exit(f"--systems: unknown system {s!r} (inplace, restart, torchrun)")
    prepare_run(a)

    work = tempfile.mkdtemp(prefix="resilience-bench-")
    try:
        print(f"# resilience bench {datetime.datetime.utcnow():%Y-%m-%dT%H:%M:%SZ}  nproc={os.cpu_count()}  "
              f"work dir {work}", flush=True)
        steps = a.steps
        if steps <= 0:
            st = calibrate(a)
            steps = int(((a.min_kills + 0.5) * a.kill_every / st + 99) // 100 * 100)
            print(f"# calibration: ddp-worker step {st * 1e3:.0f} ms -> --steps {steps}", flush=True)
        print(f"# minGPT L4 H4 C128 T64, batch 16/rank, 2 ranks CPU/Gloo, 1 thread, {steps} steps, checkpoint "
              f"every {a.checkpoint_every}; kill a trainer every {a.kill_every:g} s, a non-zero pod every "
              f"{a.pod_kill_every:g} s (0 = off; offset {a.pod_kill_offset if a.pod_kill_offset >= 0 else a.kill_every / 2:g} s), "
              f"kill seed {a.seed}", flush=True)
        rng = random.Random(a.seed)
        res = {}
        for name in systems:
            s = System(name, a)
            r = {}
            for faulty in (False, True):
                tag = "faulty" if faulty else "clean"
                d = os.path.join(work, f"{name}-{tag}")
                out = run_once(s, d, steps, a, faulty, rng)
                st, rec, sums = parse_run(name, d)
                out["sums"] = sums
                kt = [k[0] for k in out["kills"]]
                out["recovery"] = recovery_times(kt, st)
                out["reported"] = worker_reported(kt, rec) if name != "torchrun" else []
                out["last_step"] = max((x for _, x in st), default=0)
                out["normal_step"] = normal_step(st)
                r[tag] = out
                kinds = {}
                for _, kind, _ in out["kills"]:
                    kinds[kind] = kinds.get(kind, 0) + 1
                print(f"  {name:8s} {tag:6s} {out['wall']:7.1f} s  rc={out['rc']}  last step {out['last_step']}  "
                      f"kills {len(out['kills'])} {kinds}  checksums {sums}", flush=True)
            res[name] = r
            with open(os.path.join(work, "results.json"), "w") as f:
                json.dump({"steps": steps, "results": res}, f, indent=1)
        report(res, systems, steps)
    finally:
        cleanup()
        if a.keep:
            print(f"# run directories kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)


def report(res, systems, steps):
    def goodput(n):
        r = res[n]
        ok = r["clean"]["rc"] == 0 and r["faulty"]["rc"] == 0
        return r["clean"]["wall"] / r["faulty"]["wall"] if ok else None

    def corrected(n):
        # The fault-free time scaled by how fast the machine stepped in each run (normal step):
        # a shared machine's speed drifts by several percent between two runs minutes apart.
        r, g = res[n], goodput(n)
        c, f = r["clean"].get("normal_step"), r["faulty"].get("normal_step")
        return g * f / c if g is not None and c and f else None

    tr = goodput("torchrun") if "torchrun" in res else None
    trc = corrected("torchrun") if "torchrun" in res else None
    print()
    print("| system | fault-free s | faulty s | kills | goodput | vs torchrun | normal step ms clean / faulty "
          "| goodput, speed-corrected | vs torchrun | recovery mean / max s "
          "| worker-reported mean / max s | checksums agree | = fault-free |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n in systems:
        c, f = res[n]["clean"], res[n]["faulty"]
        g = goodput(n)
        mean, mx, miss = stats(f["recovery"])
        rmean, rmx, rmiss = stats(f["reported"]) if n != "torchrun" else (None, None, 0)
        rec = f"{fmt(mean)} / {fmt(mx)}" + (f" ({miss} unmeasured)" if miss else "")
        rep = "n/a" if n == "torchrun" or not any(x is not None for x in f["reported"]) else f"{fmt(rmean)} / {fmt(rmx)}" + (f" ({rmiss} none)" if rmiss else "")
        fs, cs = f["sums"], c["sums"]
        agree = len(fs) == 2 and len({v[1] for v in fs.values()}) == 1 and all(v[0] == steps for v in fs.values())
        same = agree and len(cs) == 2 and {v[1] for v in cs.values()} == {v[1] for v in fs.values()}
        kinds = {}
        for _, kind, _ in f["kills"]:
            k = "pod" if kind.startswith("pod") else "proc"
            kinds[k] = kinds.get(k, 0) + 1
        kills = f"{len(f['kills'])}" + (f" ({kinds.get('proc', 0)} proc, {kinds.get('pod', 0)} pod)"
                                         if kinds.get("pod") else "")
        ratio = g / tr if g is not None and tr else None
        gc = corrected(n)
        ratio_c = gc / trc if gc is not None and trc else None
        med = (f"{fmt(c.get('normal_step') and c['normal_step'] * 1e3, '.0f')} / "
               f"{fmt(f.get('normal_step') and f['normal_step'] * 1e3, '.0f')}")
        status = "" if c["rc"] == 0 and f["rc"] == 0 else f" (rc {c['rc']}/{f['rc']})"
        print(f"| {n}{status} | {c['wall']:.1f} | {f['wall']:.1f} | {kills} | {fmt(g)} | {fmt(ratio)} | {med} | "
              f"{fmt(gc)} | {fmt(ratio_c)} | {rec} | "
              f"{rep} | {'yes' if agree else 'NO'} | {'yes' if same else 'no'} |")
    for n in systems:
        f = res[n]["faulty"]
        if any(k[1].startswith("pod") for k in f["kills"]):
            for kind in ("rank", "pod"):
                vals = [r for k, r in zip(f["kills"], f["recovery"]) if k[1].startswith(kind)]
                mean, mx, miss = stats(vals)
                print(f"# {n}: {'process' if kind == 'rank' else 'pod'} kills: {len(vals)}, recovery mean "
                      f"{fmt(mean)} s, max {fmt(mx)} s" + (f", {miss} unmeasured" if miss else ""))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        cleanup()
        sys.exit(130)
