"""One job of fault_matrix.py and spares_bench.py as a cluster would run it, the faults a cluster
delivers to it from outside, and what the job's own records say afterwards. Python 3 stdlib only;
the process and log helpers are resilience_bench.py's.

Systems (the minGPT of resilience_bench.py, CPU/Gloo, one thread per rank):
  inplace   ddp-operator local, recovery InPlace: a rendezvous pod, `pods` worker pods (each a
            supervisor and its trainer, in a process group of its own), `spares` spare pods
  restart   ddp-operator local, recovery Restart: a pod is its trainer process
  torchrun  one torchrun agent (--standalone) with `pods` workers around torch_train.py; it has
            no pods: a "pod" there is a worker process

Pods and ranks come from where a cluster's user would read them: the operator's children (each a
pod's process group) and, under InPlace, the group's report on the rendezvous pod's /metrics
(`ddp_group_member{pod,node_rank}`): after a loss a spare holds the rank, not the pod named for it.
"""
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

import resilience_bench as rb

MEMBER = re.compile(r'^ddp_group_member\{[^}]*pod="([^"]+)",node_rank="(\d+)"\} 1')
TORCHRUN_RESTART = "will restart worker group"
SYSTEMS = ("inplace", "restart", "torchrun")


class Pod:
    def __init__(self, name, pid, role, node):
        self.name, self.pid, self.role, self.node = name, pid, role, node  # pid = process group id

    def __repr__(self):
        return f"{self.name}(pid {self.pid}, {self.role}, node {self.node})"


class Job:
    """REQUIRES: start() once; every other method from the same thread."""

    def __init__(self, system, run_dir, a, steps, pods=3, spares=0, delay=0.0, env=(), liveness=5,
                 rendezvous_timeout=120, delay_file=False, elastic=None, operator_args=(),
                 worker_args=()):
        self.system, self.dir, self.a, self.steps = system, run_dir, a, steps
        self.n, self.spares, self.delay, self.env = pods, spares, delay, list(env)
        self.liveness, self.rendezvous_timeout = liveness, rendezvous_timeout
        self.elastic, self.operator_args = elastic, list(operator_args)  # resize_bench.py
        self.worker_args = list(worker_args)  # shrink_bench.py
        self.delay_file = os.path.join(run_dir, "start-delays") if delay_file else ""
        self.name = f"b-{system}"
        self.log = StepLog(system, run_dir)
        self._members = {}  # pod -> node rank, the group's last report

    def start(self):
        os.makedirs(self.dir, exist_ok=True)  # resize_bench.py puts a snapshot there first
        out = open(os.path.join(self.dir, "bench-stdout.txt"), "w")
        if self.system == "torchrun":
            cmd = [rb.PY, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", str(self.n),
                   "--max_restarts", "10000", "--redirects", "1", "--tee", "1",
                   "--log_dir", os.path.join(self.dir, "torchrun-logs"),
                   os.path.join(rb.HERE, "torch_train.py"), "--steps", str(self.steps),
                   "--checkpoint-every", str(self.a.checkpoint_every), "--threads", "1",
                   "--snapshot", os.path.join(self.dir, "snapshot.pt")]
            if self.delay_file:
                cmd += ["--start-delay-file", self.delay_file]
            env = dict(os.environ, OMP_NUM_THREADS="1", LOGLEVEL="INFO")
        else:
            policy = [("livenessTimeoutSeconds", self.liveness), ("spares", self.spares)] \
                if self.system == "inplace" else []
            path = os.path.join(self.dir, "job.yaml")
            with open(path, "w") as f:
                f.write(rb.manifest(self.name, "InPlace" if self.system == "inplace" else "Restart", self.steps,
                                    self.a.checkpoint_every, self.a.run_timeout, self.a.worker, replicas=self.n,
                                    policy=policy, env=self.env, rendezvous_timeout=self.rendezvous_timeout,
                                    elastic=self.elastic, extra_args=self.worker_args))
            cmd = [self.a.operator, "local", "-f", path, "--run-dir", os.path.join(self.dir, "run"), "--plain",
                   "--pod-start-delay", f"{self.delay:g}", *self.operator_args]
            env = dict(os.environ)
        self.t0 = time.time()
        self.proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        rb.STARTED.append(self.proc)

    def poll(self):
        return self.proc.poll()

    def stop(self):
        rb.kill_tree(self.proc)

    def expired(self, timeout, label):
        """True, with the job stopped and a line said, once it has run `timeout` seconds: a
        bench's hard limit on one job."""
        if time.time() - self.t0 <= timeout:
            return False
        print(f"  ! {label}: hard timeout after {timeout:.0f} s: stopping it", flush=True)
        self.stop()
        return True

    # ------------------------------------------------------------ what runs now

    def pods(self):
        """The live pods: [Pod]; node is the node rank the pod holds now (None: an idle spare, the
        rendezvous pod). torchrun: its workers, node = RANK."""
        if self.system == "torchrun":
            return [Pod(f"worker-{r}", pid, "worker", r) for r, pid in self.trainers().items()]
        out = []
        for p in rb.children_map().get(self.proc.pid, []):
            cl, env = rb.cmdline(p), rb.environ(p)
            if not cl or not cl[0].endswith("ddp-worker") or not env:
                continue
            role = env.get("DDP_POD_ROLE", "worker")
            node = int(env["NODE_RANK"]) if "NODE_RANK" in env else None
            name = env.get("DDP_POD_NAME") or f"{self.name}-worker-{node}"
            out.append(Pod(name, p, role, node))
        if self.system == "inplace":
            members = self.members(out)
            for pod in out:
                pod.node = members.get(pod.name) if pod.role != "rendezvous" else None
        return out

    def members(self, pods):
        """{pod name: node rank} from the group's report (the last one read when the page is down)."""
        rdzv = [p for p in pods if p.role == "rendezvous"]
        port = rb.environ(rdzv[0].pid).get("DDP_METRICS_PORT") if rdzv else None
        if port:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
                    text = r.read().decode(errors="replace")
                self._members = {m.group(1): int(m.group(2)) for m in map(MEMBER.match, text.splitlines()) if m}
            except OSError:
                pass
        return self._members

    def trainers(self, pods=None):
        """{rank: pid} of the live training processes (nprocPerNode 1: rank = node rank)."""
        kids = rb.children_map()
        if self.system == "torchrun":
            out = {}
            for p in rb.descendants(self.proc.pid, kids):
                cl = rb.cmdline(p)
                if any(x.endswith("torch_train.py") for x in cl) and "torch.distributed.run" not in cl:
                    rank = rb.environ(p).get("RANK")
                    if rank is not None:
                        out[int(rank)] = p
            return out
        out = {}
        for pod in pods if pods is not None else self.pods():
            if pod.node is None:
                continue
            if self.system == "restart":
                out[pod.node] = pod.pid
                continue
            for c in kids.get(pod.pid, []):
                # The supervisor's child; a warm standby is named ddp-standby until it takes over.
                if rb.environ(c).get("DDP_SUPERVISED") == "1" and rb.comm(c) != "ddp-standby":
                    out[pod.node] = c
        return out

    def pod_holding(self, node):
        return next((p for p in self.pods() if p.node == node), None)

    # ------------------------------------------------------------ faults, from outside

    def kill_trainer(self, rank, sig=signal.SIGKILL):
        pid = self.trainers().get(rank)
        return _signal(pid, sig, group=False)

    def signal_pod(self, node, sig):
        """`sig` to the process group of the pod holding `node` (torchrun: to that worker)."""
        pod = self.pod_holding(node)
        if pod is None:
            return None
        if self.system == "torchrun":
            return _signal(pod.pid, sig, group=False)
        return _signal(pod.pid, sig, group=True)

    def delay_restart(self, rank, seconds):
        """torchrun: the next worker of `rank` starts `seconds` from now (an emulated pod start)."""
        with open(self.delay_file, "a") as f:
            f.write(f"{rank} {time.time() + seconds:.3f}\n")

    # ------------------------------------------------------------ what the job says afterwards

    def status(self):
        try:
            with open(os.path.join(self.dir, "run", "status.json")) as f:
                return json.load(f).get("status", {})
        except (OSError, ValueError):
            return {}

    def charges(self):
        """(restarts, recoveries, disruptions, round); torchrun: its worker-group restarts."""
        if self.system == "torchrun":
            with open(os.path.join(self.dir, "bench-stdout.txt"), errors="replace") as f:
                n = sum(TORCHRUN_RESTART in line for line in f)
            return n, 0, 0, n
        s = self.status()
        return s.get("restarts", 0), s.get("recoveries", 0), s.get("disruptions", 0), s.get("round", 0)

    def phase(self):
        return "Succeeded" if self.system == "torchrun" and self.poll() == 0 else self.status().get("phase", "?")

    def checksums(self):
        """{rank: (step, checksum)}: each rank's summary of the highest step (a rank stopped by a
        signal under Restart prints one of a lower step first)."""
        sums = {}
        for path in self.log.files():
            with open(path, errors="replace") as f:
                for line in f:
                    m = (rb.FINAL_TORCH if self.system == "torchrun" else rb.SUMMARY).search(line)
                    if m and int(m.group(2)) >= sums.get(int(m.group(1)), (-1, ""))[0]:
                        sums[int(m.group(1))] = (int(m.group(2)), m.group(3))
        return sums

    def count_in_logs(self, text):
        n = 0
        for path in self.log.files():
            with open(path, errors="replace") as f:
                n += sum(text in line for line in f)
        return n


def reference(a, steps, ranks):
    """param_checksum of a plain fault-free run of the bench's ddp-worker job (`ranks` ranks, no
    operator, no supervisor): what every rank of every ddp-operator run must end on."""
    port = rb.free_port()
    d = tempfile.mkdtemp(prefix="bench-ref-")
    args = ["--model=mingpt", *rb.MODEL, f"--steps={steps}", "--log-every=1000", "--threads=1", "--device=cpu",
            "--seed=42"]
    procs = []
    for r in reversed(range(ranks)):
        env = dict(os.environ, MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), WORLD_SIZE=str(ranks),
                   RANK=str(r), OMP_NUM_THREADS="1")
        env.pop("DDP_RECOVERY", None)
        p = subprocess.Popen([a.worker, *args], env=env, stdout=open(os.path.join(d, f"w{r}.out"), "w"),
                             stderr=subprocess.STDOUT, start_new_session=True)
        rb.STARTED.append(p)
        procs.append(p)
    for p in procs:
        try:
            p.wait(timeout=600)
        except subprocess.TimeoutExpired:
            rb.kill_tree(p)
    with open(os.path.join(d, "w0.out"), errors="replace") as f:
        m = rb.SUMMARY.search(f.read())
    shutil.rmtree(d, ignore_errors=True)
    return m.group(3) if m else None


def group_memory(pgid):
    """Host memory of a process group (a pod) from /proc/<pid>/smaps_rollup, summed over its
    processes: {"processes", "Rss", "Pss", "Anonymous"} in KiB (Pss shares the library pages
    mapped by several processes among them; Anonymous is what a process allocated itself)."""
    out = {"processes": 0, "Rss": 0, "Pss": 0, "Anonymous": 0}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
            if int(stat[stat.rindex(")") + 2:].split()[2]) != pgid:
                continue
            with open(f"/proc/{d}/smaps_rollup") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
        except (OSError, ValueError):
            continue
        out["processes"] += 1
        for k in ("Rss", "Pss", "Anonymous"):
            out[k] += int(fields.get(k, "0 kB").split()[0])
    return out


def _signal(pid, sig, group):
    if pid is None:
        return None
    try:
        (os.killpg if group else os.kill)(pid, sig)
        return pid
    except ProcessLookupError:
        return None


class StepLog:
    """Rank 0's step log ([(unix time, step)]), read as it grows: ddp-worker's glog lines from every
    pod log (whichever pod holds rank 0 now), torchrun's `step N t=...` lines."""

    def __init__(self, system, run_dir):
        self.system, self.dir = system, run_dir
        self.steps = []
        self._offsets = {}

    def files(self):
        if self.system == "torchrun":
            return [os.path.join(self.dir, "bench-stdout.txt")]
        d = os.path.join(self.dir, "run")
        return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log")) if os.path.isdir(d) else []

    def update(self):
        for path in self.files():
            at = self._offsets.get(path, 0)
            try:
                with open(path, "rb") as f:
                    f.seek(at)
                    chunk = f.read()
            except OSError:
                continue
            end = chunk.rfind(b"\n") + 1
            self._offsets[path] = at + end
            for line in chunk[:end].decode(errors="replace").splitlines():
                if self.system == "torchrun":
                    m = rb.STEP_TORCH.search(line)
                    if m:
                        self.steps.append((float(m.group(2)), int(m.group(1))))
                else:
                    m = rb.STEP_DDP.match(line)
                    if m:
                        self.steps.append((rb.glog_time(m.group(1), m.group(2)), int(m.group(3))))
        self.steps.sort()
        return self.steps

    def last(self):
        return self.steps[-1][1] if self.steps else 0

    def until(self, t):
        """(time, step) of the last line logged at or before t, or None."""
        before = [x for x in self.steps if x[0] <= t]
        return before[-1] if before else None


def stall(steps, t, ns):
    """Seconds a fault at `t` delayed rank 0: the first step >= L + 2 (L the last step logged
    before t: L + 1 was in flight) came this long after L's time + 2 normal steps. None when it
    never came."""
    before = [x for x in steps if x[0] <= t]
    t_l, last = before[-1] if before else (t, 0)
    after = [u for u, s in steps if u > t and s >= last + 2]
    return min(after) - t_l - 2 * ns if after and ns else None


def lost_time(steps, ns):
    """Seconds rank 0 spent off its normal pace between its first and last logged step: the time
    taken minus (steps advanced x normal step). Stalls and replayed steps both count."""
    if len(steps) < 2 or not ns:
        return None
    (t0, s0), (t1, s1) = steps[0], steps[-1]
    return (t1 - t0) - (s1 - s0) * ns


def wait_for(cond, timeout, job=None, every=0.2):
    """Polls cond() until true (returns True), the deadline, or the job's exit (returns False)."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if cond():
            return True
        if job is not None and job.poll() is not None:
            return bool(cond())
        time.sleep(every)
    return False
