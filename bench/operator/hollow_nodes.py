#!/usr/bin/env python3
"""Hollow nodes: N fake kubelets in one process, for measuring the operator on a real API server.

What it stands in for (everything else in the benchmark is real):
  - the kubelet: registers Node objects with room for many pods, renews their Leases in
    kube-node-lease (the node lifecycle controller's heartbeat), and for every pod bound to one
    of its nodes sets it Running and Ready with a pod IP (no container runs). A pod being deleted
    on one of its nodes "stops" at once: the fake deletes the object (grace 0, the pod's UID as a
    precondition), as a kubelet does once the containers are gone;
  - the pods' pages: each pod IP is an address of 127.0.0.0/8 and one HTTP server on
    --pages-port answers for all of them, telling pods apart by the address dialled. A worker
    pod answers /healthz; an InPlace job's rendezvous pod serves its group's report
    (common/group_contract.h): every running member of its round, and every member on a lost
    node as fenced once --liveness seconds have passed since the loss, as the real group's
    liveness rule would declare it (a store started after the loss, its predecessor lost with
    the node, fences them no sooner than its rejoin window after its start, as the real one);
  - a lost node: once the file <state>/lose names a node, that node's Lease and status are no
    longer renewed, its pods are left as they are (Kubernetes then calls it NotReady, taints it,
    and its pods' deletions are never confirmed) and their pages stop answering.

It writes <state>/events.jsonl: one line per pod set running, pod object gone, and loss, with
the wall time (time.time()) at which it happened here. Standard library only.
"""
import argparse
import http.server
import json
import os
import queue
import socketserver
import sys
import threading
import time

from kube_api import Api, ApiError

JOB_LABEL = "ddp.dev/job-name"    # api/labels.h kJobNameLabel
ROLE_LABEL = "ddp.dev/role"       # api/labels.h kRoleLabel
ROUND_LABEL = "ddp.dev/round"     # api/labels.h kRoundLabel
INDEX_LABEL = "ddp.dev/replica-index"
LEASE_NS = "kube-node-lease"
LEASE_SECONDS = 40


def now_rfc3339(micro=False):
    t = time.time()
    s = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t))
    return s + (".%06dZ" % int((t % 1) * 1e6) if micro else "Z")


class World:
    """What the hollow nodes know: their pods, the lost nodes, the fenced members. One lock."""

    def __init__(self, nodes, events_path):
        self.lock = threading.Lock()
        self.nodes = nodes
        self.lost = {}            # node -> time.time() of the loss
        self.pods = {}            # uid -> dict
        self.by_ip = {}           # pod IP -> uid
        self.ips = {}             # uid -> IP (kept after a pod goes, so an IP is never reused)
        self.acted = set()        # (uid, action) already queued
        self.fenced = {}          # job key -> {(pod, uid)}
        self.world_size = {}      # job key -> NNODES of its pods
        self.by_job = {}          # job key -> {uid}
        self.next_ip = 0
        self.events = open(events_path, "a", buffering=1)

    def log(self, **kv):
        kv.setdefault("t", time.time())
        self.events.write(json.dumps(kv, sort_keys=True) + "\n")

    def ip_for(self, uid):
        if uid not in self.ips:
            n = self.next_ip
            self.next_ip += 1
            self.ips[uid] = "127.64.%d.%d" % (n // 250, n % 250 + 1)
        return self.ips[uid]


def pod_record(obj):
    md, spec, st = obj["metadata"], obj.get("spec", {}), obj.get("status", {})
    labels = md.get("labels", {}) or {}
    env = {}
    for c in spec.get("containers", [])[:1]:
        env = {e["name"]: e.get("value", "") for e in c.get("env", []) or []}
    return {
        "ns": md["namespace"], "name": md["name"], "uid": md["uid"], "node": spec.get("nodeName", ""),
        "phase": st.get("phase", ""), "deleting": "deletionTimestamp" in md,
        "job": labels.get(JOB_LABEL, ""), "role": labels.get(ROLE_LABEL, "worker"),
        "round": labels.get(ROUND_LABEL, ""), "index": labels.get(INDEX_LABEL, ""),
        "containers": [c["name"] for c in spec.get("containers", [])],
        "nnodes": env.get("NNODES", ""),
    }


def running_status(p, ip, host_ip):
    t = now_rfc3339()
    cond = lambda ty: {"type": ty, "status": "True", "lastTransitionTime": t}
    return {
        "metadata": {"uid": p["uid"]},  # a precondition: never another pod under this name
        "status": {
            "phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}], "hostIP": host_ip,
            "startTime": t,
            "conditions": [cond("Initialized"), cond("Ready"), cond("ContainersReady"),
                           cond("PodScheduled")],
            "containerStatuses": [
                {"name": c, "ready": True, "started": True, "restartCount": 0,
                 "image": "hollow", "imageID": "hollow", "containerID": "hollow://" + p["uid"][:12],
                 "state": {"running": {"startedAt": t}}} for c in p["containers"]],
        },
    }


class HollowNodes:
    def __init__(self, args):
        self.args = args
        self.token = open(args.token_file).read().strip()
        names = ["%s%d" % (args.prefix, i) for i in range(args.nodes)]
        self.world = World(names, os.path.join(args.state_dir, "events.jsonl"))
        self.host_ip = {n: "127.63.0.%d" % (i + 1) for i, n in enumerate(names)}
        self.work = queue.Queue()
        self.clients = []

    def api(self, agent="hollow-nodes"):
        a = Api(self.args.server, self.token, self.args.ca, agent)
        self.clients.append(a)
        return a

    # --- nodes and heartbeats ---
    def register(self, api):
        for n in self.world.nodes:
            t = now_rfc3339()
            node = {
                "apiVersion": "v1", "kind": "Node",
                "metadata": {"name": n, "labels": {"kubernetes.io/hostname": n,
                                                   "kubernetes.io/os": "linux", "hollow": "true"}},
                "status": {
                    "capacity": {"cpu": "256", "memory": "1Ti", "pods": str(self.args.max_pods)},
                    "allocatable": {"cpu": "256", "memory": "1Ti", "pods": str(self.args.max_pods)},
                    "addresses": [{"type": "InternalIP", "address": self.host_ip[n]},
                                  {"type": "Hostname", "address": n}],
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                    "message": "hollow node", "lastHeartbeatTime": t,
                                    "lastTransitionTime": t}],
                    "nodeInfo": {"kubeletVersion": "v1.26.0-hollow", "architecture": "amd64",
                                 "operatingSystem": "linux"},
                },
            }
            api.call("POST", "/api/v1/nodes", node, ok=(201, 409))
            lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                     "metadata": {"name": n, "namespace": LEASE_NS},
                     "spec": {"holderIdentity": n, "leaseDurationSeconds": LEASE_SECONDS,
                              "renewTime": now_rfc3339(True)}}
            api.call("POST", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases", lease,
                     ok=(201, 409))

    def heartbeats(self):
        api = self.api()
        lose_file = os.path.join(self.args.state_dir, "lose")
        last_lease = last_status = 0.0
        while True:
            if os.path.exists(lose_file):
                node = open(lose_file).read().strip()
                with self.world.lock:
                    if node and node not in self.world.lost:
                        self.world.lost[node] = time.time()
                        self.world.log(ev="lost", node=node, t=self.world.lost[node])
            live = [n for n in self.world.nodes if n not in self.world.lost]
            t = time.time()
            if t - last_lease >= self.args.lease_renew:
                last_lease = t
                for n in live:
                    api.call("PATCH", f"/apis/coordination.k8s.io/v1/namespaces/{LEASE_NS}/leases/{n}",
                             {"spec": {"renewTime": now_rfc3339(True)}},
                             ctype="application/merge-patch+json")
            if t - last_status >= self.args.status_every:
                last_status = t
                for n in live:
                    st = now_rfc3339()
                    api.call("PATCH", f"/api/v1/nodes/{n}/status",
                             {"status": {"conditions": [{"type": "Ready", "status": "True",
                                                         "reason": "KubeletReady",
                                                         "message": "hollow node",
                                                         "lastHeartbeatTime": st}]}},
                             ctype="application/strategic-merge-patch+json")
            time.sleep(0.2)

    # --- pods ---
    def observe(self, typ, obj):
        p = pod_record(obj)
        w = self.world
        with w.lock:
            if typ == "DELETED":
                if w.pods.pop(p["uid"], None) is not None:
                    w.by_ip.pop(w.ips.get(p["uid"]), None)
                    w.by_job.get((p["ns"], p["job"]), set()).discard(p["uid"])
                    w.log(ev="gone", ns=p["ns"], pod=p["name"], uid=p["uid"], node=p["node"],
                          job=p["job"], role=p["role"])
                return
            if p["node"] not in self.host_ip:
                return
            old = w.pods.get(p["uid"])
            for k in ("ip", "started"):
                if old and k in old:
                    p[k] = old[k]
            w.pods[p["uid"]] = p
            w.by_job.setdefault((p["ns"], p["job"]), set()).add(p["uid"])
            if p["job"] and p["nnodes"]:
                w.world_size[(p["ns"], p["job"])] = int(p["nnodes"])
            if p["node"] in w.lost:
                return  # a dead kubelet does nothing
            if p["deleting"]:
                action = "stop"
            elif p["phase"] in ("", "Pending"):
                action = "start"
            else:
                return
            if (p["uid"], action) not in w.acted:
                w.acted.add((p["uid"], action))
                self.work.put((action, p["uid"]))

    def watch_pods(self):
        api = self.api()
        while True:
            lst = api.get("/api/v1/pods?limit=0")
            with self.world.lock:
                known = set(self.world.pods)
            seen = set()
            for obj in lst["items"]:
                seen.add(obj["metadata"]["uid"])
                self.observe("MODIFIED", obj)
            for uid in known - seen:
                p = self.world.pods.get(uid)
                if p:
                    self.observe("DELETED", {"metadata": {"namespace": p["ns"], "name": p["name"],
                                                          "uid": uid, "labels": {}},
                                             "spec": {"nodeName": p["node"]}})
            rv = lst["metadata"]["resourceVersion"]
            try:
                while True:
                    for typ, obj in api.watch("/api/v1/pods", rv):
                        rv = obj["metadata"]["resourceVersion"]
                        if typ == "BOOKMARK":
                            continue
                        if typ == "ERROR":
                            raise ApiError(obj.get("code", 0), json.dumps(obj))
                        self.observe(typ, obj)
            except (ApiError, OSError) as e:
                print(f"hollow-nodes: pod watch ended ({e}); listing again", file=sys.stderr)

    def act(self):
        api = self.api()
        w = self.world
        while True:
            action, uid = self.work.get()
            with w.lock:
                p = w.pods.get(uid)
                if p is None or p["node"] in w.lost:
                    continue
                if action == "start":
                    p["ip"] = w.ip_for(uid)
                p = dict(p)
            path = f"/api/v1/namespaces/{p['ns']}/pods/{p['name']}"
            try:
                if action == "start":
                    api.call("PATCH", path + "/status", running_status(p, p["ip"], self.host_ip[p["node"]]),
                             ctype="application/merge-patch+json")
                    with w.lock:
                        if uid in w.pods:
                            w.by_ip[p["ip"]] = uid
                            w.pods[uid]["started"] = time.time()
                        w.log(ev="running", ns=p["ns"], pod=p["name"], uid=uid, node=p["node"],
                              job=p["job"], role=p["role"])
                else:
                    api.call("DELETE", path, {"gracePeriodSeconds": 0, "preconditions": {"uid": uid}},
                             ok=(200, 202, 404, 409))
            except ApiError as e:
                if e.status not in (404, 409, 422):
                    print(f"hollow-nodes: {action} {p['ns']}/{p['name']}: {e}", file=sys.stderr)

    # --- pages ---
    def page(self, local_ip, path):
        """(status, body) for a request dialled to local_ip; None: a silent node, no answer."""
        w = self.world
        with w.lock:
            uid = w.by_ip.get(local_ip)
            p = w.pods.get(uid) if uid else None
            if p is None:
                return 404, "no such pod\n"
            if p["node"] in w.lost:
                return None
            if path.startswith("/healthz"):
                return 200, "ok\n"
            if p["role"] != "rendezvous":
                return 200, "# a hollow pod: no trainer\n"
            key = (p["ns"], p["job"])
            fenced = w.fenced.setdefault(key, set())
            # A store started after a loss (the old one was on the lost node) knows nothing of
            # the members that never register again: it fences them after its rejoin window.
            started = p.get("started", 0.0)
            members = []
            for q in (w.pods[u] for u in w.by_job.get(key, ())):
                if q["role"] != "worker" or q["round"] != p["round"]:
                    continue
                lost_at = w.lost.get(q["node"])
                if lost_at is not None:
                    due = lost_at + self.args.liveness
                    if started > lost_at:
                        due = max(due, started + self.args.rejoin_window)
                    if time.time() >= due:
                        if (q["name"], q["uid"]) not in fenced:
                            fenced.add((q["name"], q["uid"]))
                            w.log(ev="fenced", ns=q["ns"], pod=q["name"], uid=q["uid"],
                                  node=q["node"], job=q["job"])
                    else:
                        members.append(q)  # not declared lost yet: still a member
                elif q["phase"] == "Running" and not q["deleting"]:
                    members.append(q)
            size = w.world_size.get(key, len(members))
        lines = [
            "# TYPE ddp_group_generation gauge", "ddp_group_generation %d" % (1 + len(fenced)),
            "# TYPE ddp_group_world_size gauge", "ddp_group_world_size %d" % size,
            "# TYPE ddp_group_recoveries gauge", "ddp_group_recoveries 0",
            "# TYPE ddp_group_budget_left gauge", "ddp_group_budget_left 5",
            "# TYPE ddp_group_member gauge"]
        for q in sorted(members, key=lambda q: q["name"]):
            lines.append('ddp_group_member{pod="%s",node_rank="%s"} 1' % (q["name"], q["index"] or 0))
        lines.append("# TYPE ddp_group_fenced gauge")
        for name, u in sorted(fenced):
            lines.append('ddp_group_fenced{pod="%s",uid="%s"} 1' % (name, u))
        return 200, "\n".join(lines) + "\n"

    def serve_pages(self):
        hollow = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_GET(self):
                r = hollow.page(self.connection.getsockname()[0], self.path)
                if r is None:  # a silent node: no answer until the reader gives up
                    time.sleep(hollow.args.silent_hold)
                    self.close_connection = True
                    return
                body = r[1].encode()
                self.send_response(r[0])
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *a):
                pass

        class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
            daemon_threads = True
            allow_reuse_address = True
            request_queue_size = 256

        Server(("0.0.0.0", self.args.pages_port), Handler).serve_forever()

    def run(self):
        self.register(self.api())
        threads = [self.heartbeats, self.watch_pods, self.serve_pages] + [self.act] * self.args.actors
        for f in threads:
            threading.Thread(target=f, daemon=True).start()
        open(os.path.join(self.args.state_dir, "ready"), "w").close()
        path = os.path.join(self.args.state_dir, "requests")
        while True:  # the count of API requests made, for the driver's rates
            time.sleep(0.5)
            with open(path + ".tmp", "w") as f:
                f.write("%d\n" % sum(c.requests for c in self.clients))
            os.rename(path + ".tmp", path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--server", required=True, help="https://host:port of the API server")
    ap.add_argument("--token-file", required=True)
    ap.add_argument("--ca", required=True, help="the API server's CA certificate")
    ap.add_argument("--nodes", type=int, default=4)
    ap.add_argument("--prefix", default="hollow-")
    ap.add_argument("--max-pods", type=int, default=250)
    ap.add_argument("--state-dir", required=True)
    ap.add_argument("--pages-port", type=int, default=29400, help="every job's spec.metrics.port")
    ap.add_argument("--liveness", type=float, default=10, help="seconds until a lost member is fenced")
    ap.add_argument("--rejoin-window", type=float, default=3,
                    help="a new store fences members that do not register again after this long "
                         "(worker/group/rejoin.h: max(3 s, liveness / 4))")
    ap.add_argument("--silent-hold", type=float, default=5, help="a silent page holds a reader this long")
    ap.add_argument("--lease-renew", type=float, default=10, help="seconds between Lease renewals")
    ap.add_argument("--status-every", type=float, default=60, help="seconds between node status posts")
    ap.add_argument("--actors", type=int, default=8, help="threads writing pod status and deletes")
    args = ap.parse_args()
    os.makedirs(args.state_dir, exist_ok=True)
    HollowNodes(args).run()


if __name__ == "__main__":
    main()
