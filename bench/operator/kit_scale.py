#!/usr/bin/env python3
"""The operator at scale on a real API server (issue 45, part 4).

Real: etcd, kube-apiserver, kube-scheduler, kube-controller-manager (node lifecycle: NotReady,
taints) from the given Kubernetes binaries, and the real ddp-operator binary with its default
rate limit. Stood in: the kubelet (hollow_nodes.py: no containers; pods are set Running by the
fake) and the InPlace group's report that each job's rendezvous pod serves (the fake declares a
lost node's members fenced --liveness seconds after the loss, as the real group would).

Steps: start the control plane, N hollow nodes and the operator; create J DDPJobs of P pods
(recovery InPlace, spread one worker of each job per node by a topology constraint); wait until
every pod runs; lose one node (its Lease and status stop, its pods are left as they are); wait
until every affected pod has a replacement Running on another node. Prints a table and writes a
CSV of every figure. Everything started here is stopped here.

  nice -n 19 python3 bench/operator/kit_scale.py --bin K8S_BIN_DIR \
      --operator build/operator/ddp-operator --work WORKDIR --nodes 4 --jobs 2 --pods 4
"""
import argparse
import csv
import json
import os
import statistics
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from control_plane import ControlPlane  # noqa: E402
from kube_api import Api  # noqa: E402
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "scale"))
from local_scale import cpu_seconds as proc_cpu_seconds  # noqa: E402  utime + stime, None once gone

NS = "opscale"
OPERATOR_METRICS = "127.0.0.1:22080"
OPERATOR_HEALTH = "127.0.0.1:22081"
PAGES_PORT = 29400
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


def job_manifest(name, pods, max_restarts=5):
    spread = {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
              "whenUnsatisfiable": "DoNotSchedule", "nodeTaintsPolicy": "Honor",
              "labelSelector": {"matchLabels": {"ddp.dev/job-name": name, "ddp.dev/role": "worker"}}}
    return {
        "apiVersion": "ddp.dev/v1alpha1", "kind": "DDPJob",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "replicas": pods,
            "failurePolicy": {"recovery": "InPlace", "maxRestarts": max_restarts},
            "metrics": {"port": PAGES_PORT},
            "template": {"spec": {
                "automountServiceAccountToken": False,
                "topologySpreadConstraints": [spread],
                "containers": [{"name": "worker", "image": "ddp-worker-cpu:0.1.0",
                                "command": ["ddp-worker"],
                                "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}},
        },
    }


# --- measurements ---
def proc_memory(pid):
    out = {}
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    out["Pss"] = int(line.split()[1]) * 1024
    except OSError:
        pass
    return out


def counter_sum(text, name, by=None):
    """Sums the samples of counter `name` in an exposition page, per value of label `by`."""
    out = {}
    for line in text.splitlines():
        if not line.startswith(name + "{") and not line.startswith(name + " "):
            continue
        labels, _, value = line.rpartition(" ")
        key = "all"
        if by:
            i = labels.find(by + '="')
            key = labels[i + len(by) + 2:labels.index('"', i + len(by) + 2)] if i >= 0 else ""
        out[key] = out.get(key, 0.0) + float(value)
    return out


class Sampler:
    """A snapshot of every counter the table needs, taken at a named moment."""

    def __init__(self, cp, operator_pid, hollow_dir, driver):
        self.cp, self.pid, self.hollow_dir, self.driver = cp, operator_pid, hollow_dir, driver
        self.marks = {}
        self.peak_cores = {}  # window start mark -> highest 1-s operator CPU

    def mark(self, name):
        api = self.cp.get("/metrics")
        import urllib.request
        op = urllib.request.urlopen(f"http://{OPERATOR_METRICS}/metrics", timeout=10).read().decode()
        try:
            hollow = int(open(os.path.join(self.hollow_dir, "requests")).read())
        except (OSError, ValueError):
            hollow = 0
        self.marks[name] = {
            "t": time.time(), "cpu": proc_cpu_seconds(self.pid), "mem": proc_memory(self.pid),
            "api_by_verb": counter_sum(api, "apiserver_request_total", "verb"),
            "op_requests": counter_sum(op, "ddp_operator_api_requests_total").get("all", 0.0),
            "op_by_verb": counter_sum(op, "ddp_operator_api_requests_total", "verb"),
            "hollow_requests": hollow, "driver_requests": self.driver.requests,
            "op_scrapes": counter_sum(op, "ddp_operator_progress_scrapes_total").get("all", 0.0),
            "cpu_by_process": {n: proc_cpu_seconds(p.pid) for n, p in self.cp.procs.items() if p.poll() is None},
            "load": open("/proc/loadavg").read().split()[:3],
        }

    def window(self, a, b):
        x, y = self.marks[a], self.marks[b]
        dt = y["t"] - x["t"]
        verbs = {v: y["api_by_verb"].get(v, 0) - x["api_by_verb"].get(v, 0) for v in y["api_by_verb"]}
        total = sum(verbs.values())
        return {
            "seconds": dt,
            "api_rps": total / dt,
            "api_rps_no_watch": (total - verbs.get("WATCH", 0)) / dt,
            "api_by_verb": {v: n / dt for v, n in sorted(verbs.items()) if n},
            "operator_rps": (y["op_requests"] - x["op_requests"]) / dt,
            "operator_by_verb": {v: (n - x["op_by_verb"].get(v, 0)) / dt
                                 for v, n in sorted(y["op_by_verb"].items()) if n - x["op_by_verb"].get(v, 0)},
            "hollow_rps": (y["hollow_requests"] - x["hollow_requests"]) / dt,
            "driver_rps": (y["driver_requests"] - x["driver_requests"]) / dt,
            "operator_page_reads": (y["op_scrapes"] - x["op_scrapes"]) / dt,
            "operator_cores": (y["cpu"] - x["cpu"]) / dt,
            "cores_by_process": {n: round((c - x["cpu_by_process"][n]) / dt, 3)
                                 for n, c in y["cpu_by_process"].items() if n in x["cpu_by_process"]},
        }


def operator_requests():
    import urllib.request
    page = urllib.request.urlopen(f"http://{OPERATOR_METRICS}/metrics", timeout=10).read().decode()
    return counter_sum(page, "ddp_operator_api_requests_total").get("all", 0.0)


def peak_thread(pid, stop, out):
    """The operator's highest CPU and API request rate over any 1-s interval, and its highest
    RSS and PSS, while it runs."""
    last_t, last_c, last_r = time.time(), proc_cpu_seconds(pid), operator_requests()
    while not stop.is_set():
        time.sleep(1)
        try:
            t, c, r = time.time(), proc_cpu_seconds(pid), operator_requests()
            m = proc_memory(pid)
        except OSError:
            return
        out["peak_cores"] = max(out.get("peak_cores", 0), (c - last_c) / (t - last_t))
        out["peak_rps"] = max(out.get("peak_rps", 0), (r - last_r) / (t - last_t))
        out["peak_rss"] = max(out.get("peak_rss", 0), m.get("VmRSS", 0))
        out["peak_pss"] = max(out.get("peak_pss", 0), m.get("Pss", 0))
        last_t, last_c, last_r = t, c, r


class Events:
    """hollow_nodes.py's events.jsonl, read as it grows."""

    def __init__(self, path):
        self.path, self.pos = path, 0
        self.running = {}   # uid -> event
        self.gone = set()
        self.lost = None
        self.by_name = {}   # (ns, pod) -> [running events, in order]

    def poll(self):
        if not os.path.exists(self.path):
            return
        with open(self.path) as f:
            f.seek(self.pos)
            while True:
                line = f.readline()
                if not line.endswith("\n"):
                    break
                self.pos = f.tell()
                e = json.loads(line)
                if e["ev"] == "running":
                    self.running[e["uid"]] = e
                    self.by_name.setdefault((e["ns"], e["pod"]), []).append(e)
                elif e["ev"] == "gone":
                    self.gone.add(e["uid"])
                elif e["ev"] == "lost":
                    self.lost = e

    def running_now(self):
        return [e for u, e in self.running.items() if u not in self.gone]


def wait_until(what, ok, secs, step=0.5):
    deadline = time.time() + secs
    while time.time() < deadline:
        if ok():
            return True
        time.sleep(step)
    print(f"timed out: {what} ({secs} s)", file=sys.stderr)
    return False


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q * (len(xs) - 1))))] if xs else float("nan")


def main():
    ap = argparse.ArgumentParser(description="the operator at scale on a real API server")
    ap.add_argument("--bin", required=True, help="directory with kube-apiserver, -scheduler, -controller-manager")
    ap.add_argument("--etcd", default="etcd")
    ap.add_argument("--operator", required=True, help="the ddp-operator binary")
    ap.add_argument("--work", required=True, help="an empty directory for this run")
    ap.add_argument("--nodes", type=int, default=16)
    ap.add_argument("--jobs", type=int, default=64)
    ap.add_argument("--pods", type=int, default=16, help="workers per job")
    ap.add_argument("--lose", default="", help="the node to lose (default: the last; most-rendezvous: the one with the most rendezvous pods)")
    ap.add_argument("--liveness", type=float, default=10)
    ap.add_argument("--idle", type=float, default=20, help="seconds of steady state measured before the loss")
    ap.add_argument("--timeout", type=float, default=300)
    ap.add_argument("--csv", default="", help="where to write the figures (default WORK/results.csv)")
    ap.add_argument("--operator-flag", action="append", default=[], help="extra flag for ddp-operator run")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    cp = ControlPlane(args.bin, args.work, args.etcd)
    stop = threading.Event()
    try:
        return run(args, cp, stop)
    finally:
        stop.set()
        cp.stop_all()


def run(args, cp, stop):
    t_begin = time.time()
    cp.up()
    admin = Api(cp.server, open(cp.token_file("admin")).read().strip(), os.path.join(cp.pki, "ca.crt"),
                "opscale-driver")
    # The CRD (the chart's, as kubectl would apply it).
    import yaml  # Debian's python3-yaml; only to read the chart's CRD
    crd_dir = os.path.join(os.path.dirname(__file__), "..", "..", "charts", "ddp-operator", "crds")
    for f in sorted(os.listdir(crd_dir)):
        for doc in yaml.safe_load_all(open(os.path.join(crd_dir, f))):
            if doc:
                admin.call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", doc, ok=(201, 409))
    cp.wait("the DDPJob CRD established", lambda: any(
        c["type"] == "Established" and c["status"] == "True" for c in admin.get(
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/ddpjobs.ddp.dev")["status"].get("conditions", [])), 60)
    admin.call("POST", "/api/v1/namespaces", {"metadata": {"name": NS}}, ok=(201, 409))
    cp.wait("the namespace's default ServiceAccount", lambda: admin.get(f"/api/v1/namespaces/{NS}/serviceaccounts/default"), 60)

    hollow_dir = os.path.join(args.work, "hollow")
    here = os.path.dirname(os.path.abspath(__file__))
    cp.start("hollow-nodes", [sys.executable, os.path.join(here, "hollow_nodes.py"), "--server", cp.server,
                              "--token-file", cp.token_file("hollow-nodes"), "--ca", os.path.join(cp.pki, "ca.crt"),
                              "--nodes", str(args.nodes), "--state-dir", hollow_dir,
                              "--pages-port", str(PAGES_PORT), "--liveness", str(args.liveness),
                              "--max-pods", str(max(110, 2 * args.jobs * (args.pods + 1) // args.nodes + 10))])
    cp.wait("hollow nodes registered", lambda: os.path.exists(os.path.join(hollow_dir, "ready")), 60)
    names = ["hollow-%d" % i for i in range(args.nodes)]

    def ready_nodes():
        n = 0
        for node in admin.get("/api/v1/nodes")["items"]:
            for c in node["status"].get("conditions", []):
                n += c["type"] == "Ready" and c["status"] == "True"
        return n
    cp.wait("hollow nodes Ready", lambda: ready_nodes() == args.nodes, 60)

    op = cp.start("ddp-operator", [args.operator, "run", "--kubeconfig", cp.kubeconfig("ddp-operator"),
                                   "--metrics-bind-address", OPERATOR_METRICS,
                                   "--health-probe-bind-address", OPERATOR_HEALTH] + args.operator_flag)
    import urllib.request
    cp.wait("ddp-operator ready", lambda: urllib.request.urlopen(f"http://{OPERATOR_HEALTH}/readyz", timeout=2), 60)
    peaks = {}
    threading.Thread(target=peak_thread, args=(op.pid, stop, peaks), daemon=True).start()
    s = Sampler(cp, op.pid, hollow_dir, admin)
    ev = Events(os.path.join(hollow_dir, "events.jsonl"))

    # 1. Create the jobs; wait until every pod runs (workers + one rendezvous pod per job).
    expected = args.jobs * (args.pods + 1)
    s.mark("apply")
    t_applied = time.time()
    for j in range(args.jobs):
        admin.call("POST", f"/apis/ddp.dev/v1alpha1/namespaces/{NS}/ddpjobs", job_manifest("s-%02d" % j, args.pods))

    def all_running():
        ev.poll()
        return len(ev.running_now()) >= expected
    ok_running = wait_until(f"{expected} pods running", all_running, args.timeout)
    t_running = max((e["t"] for e in ev.running_now()), default=time.time())
    s.mark("running")
    phases = {}
    for j in admin.get(f"/apis/ddp.dev/v1alpha1/namespaces/{NS}/ddpjobs")["items"]:
        ph = j.get("status", {}).get("phase", "")
        phases[ph] = phases.get(ph, 0) + 1
    # 2. Steady state.
    time.sleep(args.idle)
    s.mark("idle")

    # 3. Lose a node: which pods it holds (the driver's one list of them).
    pods = admin.get(f"/api/v1/namespaces/{NS}/pods")["items"]
    lose = args.lose or names[-1]
    if lose == "most-rendezvous":
        rdv = [p["spec"].get("nodeName") for p in pods
               if p["metadata"]["labels"].get("ddp.dev/role") == "rendezvous"]
        lose = max(names, key=rdv.count)
    affected = [(p["metadata"]["name"], p["metadata"]["uid"], p["metadata"]["labels"].get("ddp.dev/job-name"),
                 p["metadata"]["labels"].get("ddp.dev/role", "worker"))
                for p in pods if p["spec"].get("nodeName") == lose]
    per_node, workers_on_lost = {}, {}
    for p in pods:
        labels = p["metadata"]["labels"]
        if labels.get("ddp.dev/role", "worker") != "worker":
            continue
        node = p["spec"].get("nodeName", "")
        per_node[node] = per_node.get(node, 0) + 1
        if node == lose:
            workers_on_lost[labels["ddp.dev/job-name"]] = workers_on_lost.get(labels["ddp.dev/job-name"], 0) + 1
    with open(os.path.join(hollow_dir, "lose.tmp"), "w") as f:
        f.write(lose + "\n")
    os.rename(os.path.join(hollow_dir, "lose.tmp"), os.path.join(hollow_dir, "lose"))
    wait_until("the loss", lambda: ev.poll() or ev.lost, 10, 0.1)
    t_loss = ev.lost["t"]
    t_known = t_loss + args.liveness

    def replaced_at(name, uid):
        for e in ev.by_name.get((NS, name), []):
            if e["uid"] != uid and e["node"] != lose and e["t"] > t_loss:
                return e["t"]
        return None

    node_unknown = {}

    def all_replaced():
        ev.poll()
        if "known" not in s.marks and time.time() >= t_known:
            s.mark("known")
        if "t" not in node_unknown:
            n = admin.get(f"/api/v1/nodes/{lose}")
            for c in n["status"].get("conditions", []):
                if c["type"] == "Ready" and c["status"] != "True":
                    node_unknown["t"] = time.time()
        return all(replaced_at(n, u) for n, u, _, _ in affected)
    ok_replaced = wait_until("every affected pod replaced off the node", all_replaced, args.timeout)
    t_replaced = time.time()
    s.mark("replaced")
    # Until Kubernetes itself calls the node lost, and 10 s after, to see what that costs.
    wait_until("the node NotReady", lambda: all_replaced() and "t" in node_unknown, 120, 1)
    time.sleep(10)
    s.mark("after")

    # --- figures ---
    by_job = {}
    for name, uid, job, role in affected:
        t = replaced_at(name, uid)
        by_job.setdefault(job, []).append(t)
    job_times = [max(ts) - t_known for ts in by_job.values() if all(ts)]
    pod_times = [t - t_known for ts in by_job.values() for t in ts if t]
    rdv_jobs = {job for _, _, job, role in affected if role == "rendezvous"}
    with open(os.path.join(args.work, "jobs.csv"), "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["job", "pods on the lost node", "rendezvous pod on it", "last replaced after known (s)"])
        for job, ts in sorted(by_job.items()):
            wr.writerow([job, len(ts), job in rdv_jobs, round(max(ts) - t_known, 3) if all(ts) else ""])
    w_start, w_idle = s.window("apply", "running"), s.window("running", "idle")
    w_loss, w_after = s.window("idle", "replaced"), s.window("replaced", "after")
    w_react = s.window("known", "replaced") if "known" in s.marks else w_loss
    mem = s.marks["after"]["mem"]
    rows = [
        ("nodes", args.nodes, ""), ("jobs", args.jobs, ""), ("workers per job", args.pods, ""),
        ("pods (workers + rendezvous)", expected, ""),
        ("all pods running", ok_running, ""), ("jobs Running (phase)", phases.get("Running", 0), ""),
        ("time to Running, all pods", t_running - t_applied, "s"),
        ("lost node", lose, ""), ("pods on the lost node", len(affected), ""),
        ("of them rendezvous pods", sum(1 for a in affected if a[3] == "rendezvous"), ""),
        ("workers per node (min..max)", "%d..%d" % (min(per_node.get(n, 0) for n in names),
                                                  max(per_node.get(n, 0) for n in names)), ""),
        ("jobs with workers on the lost node (each: min..max)", "%d (%d..%d)" % (
            len(workers_on_lost), min(workers_on_lost.values(), default=0),
            max(workers_on_lost.values(), default=0)), ""),
        ("jobs whose rendezvous pod was on it", len(rdv_jobs), ""),
        ("every affected pod replaced", ok_replaced, ""),
        ("known: loss + liveness", args.liveness, "s"),
        ("replaced after known, per job p50", pct(job_times, 0.5), "s"),
        ("replaced after known, per job p99", pct(job_times, 0.99), "s"),
        ("replaced after known, per job max", max(job_times, default=float("nan")), "s"),
        ("replaced after known, per pod min", min(pod_times, default=float("nan")), "s"),
        ("replaced after the loss, max", max(job_times, default=float("nan")) + args.liveness, "s"),
        ("node NotReady after the loss", node_unknown.get("t", float("nan")) - t_loss, "s"),
    ]
    windows = (("start", w_start), ("steady", w_idle), ("loss to replaced", w_loss),
               ("known to replaced", w_react), ("after", w_after))
    for label, w in windows:
        rows += [
            (f"{label}: window", w["seconds"], "s"),
            (f"{label}: API requests/s, all clients", w["api_rps"], "1/s"),
            (f"{label}: API requests/s, all clients, without WATCH", w["api_rps_no_watch"], "1/s"),
            (f"{label}: API requests/s, the operator", w["operator_rps"], "1/s"),
            (f"{label}: API requests/s, the hollow nodes", w["hollow_rps"], "1/s"),
            (f"{label}: API requests/s, this driver", w["driver_rps"], "1/s"),
            (f"{label}: the operator's page reads/s", w["operator_page_reads"], "1/s"),
            (f"{label}: the operator's CPU", w["operator_cores"], "cores"),
            (f"{label}: API requests/s by verb", json.dumps({k: round(v, 1) for k, v in w["api_by_verb"].items()}), ""),
            (f"{label}: operator requests/s by verb", json.dumps({k: round(v, 1) for k, v in w["operator_by_verb"].items()}), ""),
            (f"{label}: CPU cores by process", json.dumps(w["cores_by_process"]), ""),
        ]
    rows += [
        ("operator peak CPU (1 s)", peaks.get("peak_cores", 0), "cores"),
        ("operator peak API requests/s (1 s)", peaks.get("peak_rps", 0), "1/s"),
        ("operator RSS at the end", mem.get("VmRSS", 0) / 2**20, "MiB"),
        ("operator peak RSS (VmHWM)", mem.get("VmHWM", 0) / 2**20, "MiB"),
        ("operator PSS at the end", mem.get("Pss", 0) / 2**20, "MiB"),
        ("load average at apply / loss / end", " ".join(s.marks["apply"]["load"]) + " / " +
         " ".join(s.marks["idle"]["load"]) + " / " + " ".join(s.marks["after"]["load"]), ""),
        ("run took", time.time() - t_begin, "s"),
    ]
    out = args.csv or os.path.join(args.work, "results.csv")
    with open(out, "w", newline="") as f:
        wr = csv.writer(f)
        wr.writerow(["figure", "value", "unit"])
        for r in rows:
            wr.writerow([r[0], round(r[1], 3) if isinstance(r[1], float) else r[1], r[2]])
    width = max(len(r[0]) for r in rows)
    for r in rows:
        v = "%.2f" % r[1] if isinstance(r[1], float) else str(r[1])
        print(f"{r[0]:<{width}}  {v} {r[2]}")
    print("csv:", out)
    return 0 if ok_running and ok_replaced else 1


if __name__ == "__main__":
    sys.exit(main())
