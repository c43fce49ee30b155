#!/usr/bin/env python3
"""Tests of tests/cluster/netpol.py, the kit's ingress NetworkPolicy enforcer.

Each row is a connection attempt and whether it must pass, written from the NetworkPolicy
semantics of the Kubernetes docs (concepts/services-networking/network-policies), not from the
program's output: the policies are the operator's per-job policy (operator/plan/network_policy.cc,
as tests/operator/network_policy_test.cc pins it), the chart's operator policy
(charts/ddp-operator/templates/networkpolicy.yaml, rendered by hand), and small policies for each
rule of the semantics. Every row is checked twice: against the computed allowed set (Model.admits)
and against the rendered iptables chain, read by a small evaluator of the rule syntax it uses.
With root, `unshare` and iptables, the payload is also loaded into a private network namespace.
"""
import ipaddress
import os
import re
import shlex
import shutil
import subprocess
import sys
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import netpol  # noqa: E402


# ---- builders

def ns(name, **labels):
    return {"metadata": {"name": name, "labels": dict(labels, **{"kubernetes.io/metadata.name": name})}}


def pod(namespace, name, ip, labels=None, ports=(), phase="Running", host_network=False):
    return {"metadata": {"namespace": namespace, "name": name, "labels": labels or {}},
            "spec": {"hostNetwork": host_network,
                     "containers": [{"name": "c", "ports": [
                         {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]}]},
            "status": {"phase": phase, "podIP": ip}}


def policy(namespace, name, spec):
    return {"metadata": {"namespace": namespace, "name": name}, "spec": spec}


def items(*objs):
    return {"items": list(objs)}


def job_labels(job, role="worker", index=None):
    labels = {"ddp.dev/job-name": job, "ddp.dev/role": role}
    if index is not None:
        labels["ddp.dev/replica-index"] = str(index)
    return labels


# The cluster every operator row runs in: job mingpt (two workers on two nodes and its rendezvous
# pod) and job other in namespace ml, the operator in ddp-system, Prometheus in prom, a probe pod
# in dev, one in ml that belongs to no job.
NAMESPACES = items(ns("ml"), ns("ddp-system"), ns("prom", team="obs"), ns("dev", team="dev"))
W0, W1, RDZV, OTHER = "10.244.0.10", "10.244.1.11", "10.244.1.12", "10.244.0.20"
OPERATOR, PROM, PROBE, LONER, NODE = "10.244.0.2", "10.244.0.30", "10.244.1.40", "10.244.0.50", "10.244.0.1"
METRICS = (("metrics", 9400, "TCP"),)
OPERATOR_LABELS = {"app.kubernetes.io/name": "ddp-operator", "app.kubernetes.io/instance": "ddp"}
PODS = items(
    pod("ml", "mingpt-worker-0", W0, job_labels("mingpt", index=0), METRICS),
    pod("ml", "mingpt-worker-1", W1, job_labels("mingpt", index=1), METRICS),
    pod("ml", "mingpt-rendezvous", RDZV, job_labels("mingpt", "rendezvous"), METRICS),
    pod("ml", "other-worker-0", OTHER, job_labels("other", index=0), METRICS),
    pod("ml", "loner", LONER, {"app": "loner"}),
    pod("ddp-system", "ddp-ddp-operator-7d9", OPERATOR, OPERATOR_LABELS,
        (("metrics", 8080, "TCP"), ("health", 8081, "TCP"))),
    pod("prom", "prometheus-0", PROM, {"app": "prometheus"}),
    pod("dev", "probe", PROBE, {"app": "probe"}),
)


def operator_job_policy(job, namespaces):
    """The operator's policy for `job` (operator/plan/network_policy.h's contract, as
    tests/operator/network_policy_test.cc has it literally): every port from the job's pods; the
    metrics port 9400/TCP from pods of each namespace in `namespaces`."""
    sel = {"matchLabels": {"ddp.dev/job-name": job}}
    ingress = [{"from": [{"podSelector": sel}]}]
    if namespaces:
        ingress.append({"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": n}}}
                                 for n in namespaces],
                        "ports": [{"protocol": "TCP", "port": 9400}]})
    return policy("ml", job, {"podSelector": sel, "policyTypes": ["Ingress"], "ingress": ingress})


def chart_operator_policy(prometheus_namespace):
    """charts/ddp-operator/templates/networkpolicy.yaml rendered for release ddp: named ports."""
    metrics = {"ports": [{"port": "metrics", "protocol": "TCP"}]}
    if prometheus_namespace:
        metrics["from"] = [{"namespaceSelector": {"matchLabels": {
            "kubernetes.io/metadata.name": prometheus_namespace}}}]
    return policy("ddp-system", "ddp-ddp-operator", {
        "podSelector": {"matchLabels": OPERATOR_LABELS}, "policyTypes": ["Ingress"],
        "ingress": [{"ports": [{"port": "health", "protocol": "TCP"}]}, metrics]})


# ---- an evaluator of the rendered chain (the subset of iptables syntax render() writes)

def chain_admits(payload, src, dst, proto, port, established=False):
    src, dst = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    for line in payload.splitlines():
        if not line.startswith("-A " + netpol.CHAIN + " "):
            continue
        a = shlex.split(line)[2:]
        opts, i = {}, 0
        while i < len(a):
            if a[i] == "-m":
                i += 2
                continue
            opts[a[i]] = a[i + 1]
            i += 2
        if "--ctstate" in opts:
            if established:
                return opts["-j"] != "DROP"
            continue
        if "-d" in opts and dst not in ipaddress.ip_network(opts["-d"]):
            continue
        if "-s" in opts and src not in ipaddress.ip_network(opts["-s"]):
            continue
        if "-p" in opts and opts["-p"] != proto.lower():
            continue
        if "--dport" in opts:
            lo, _, hi = opts["--dport"].partition(":")
            if not int(lo) <= port <= int(hi or lo):
                continue
        return opts["-j"] != "DROP"
    return True  # the end of the chain: back to FORWARD


class Case(unittest.TestCase):
    def check_rows(self, model, rows):
        payload = model.render()
        for why, src, dst, proto, port, want in rows:
            with self.subTest(why):
                self.assertEqual(model.admits(src, dst, proto, port), want, why)
                self.assertEqual(chain_admits(payload, src, dst, proto, port), want,
                                 why + " (the rendered chain)\n" + payload)


class OperatorPolicies(Case):
    def test_the_job_policy_with_a_prometheus_namespace(self):
        m = netpol.Model(items(operator_job_policy("mingpt", ["ddp-system", "prom"])), PODS, NAMESPACES)
        self.check_rows(m, [
            ("a worker reaches the other worker's store port across nodes", W0, W1, "TCP", 29500, True),
            ("a worker reaches the rendezvous pod's ports", W1, RDZV, "TCP", 29400, True),
            ("the rendezvous pod reads a worker's metrics", RDZV, W0, "TCP", 9400, True),
            ("job pods on every protocol too", W0, W1, "UDP", 5353, True),
            ("the operator reads the metrics port", OPERATOR, W0, "TCP", 9400, True),
            ("the operator reads the rendezvous pod's page", OPERATOR, RDZV, "TCP", 9400, True),
            ("the operator: no other port", OPERATOR, W0, "TCP", 29500, False),
            ("Prometheus scrapes a worker", PROM, W1, "TCP", 9400, True),
            ("Prometheus scrapes the rendezvous pod", PROM, RDZV, "TCP", 9400, True),
            ("Prometheus: no other port", PROM, W0, "TCP", 29500, False),
            ("Prometheus: the metrics port over UDP is not it", PROM, W0, "UDP", 9400, False),
            ("a pod of another namespace: not the metrics port", PROBE, W0, "TCP", 9400, False),
            ("another job's pod in the same namespace: nothing", OTHER, W0, "TCP", 29500, False),
            ("another job's pod: not the metrics port either", OTHER, W0, "TCP", 9400, False),
            ("a pod of no job in the namespace: nothing", LONER, W1, "TCP", 9400, False),
            ("a node address (not a pod): nothing", NODE, W0, "TCP", 9400, False),
            ("pods no policy selects are untouched: the other job", PROBE, OTHER, "TCP", 29500, True),
            ("pods no policy selects are untouched: Prometheus", PROBE, PROM, "TCP", 9090, True),
        ])
        self.assertEqual(set(m.isolated), {W0, W1, RDZV})

    def test_the_job_policy_without_a_prometheus_namespace(self):
        # The chart's default (prometheusNamespace ""): only the operator's namespace is admitted,
        # which is why Prometheus in its own namespace sees every worker target down.
        m = netpol.Model(items(operator_job_policy("mingpt", ["ddp-system"])), PODS, NAMESPACES)
        self.check_rows(m, [
            ("Prometheus in its own namespace: refused", PROM, W0, "TCP", 9400, False),
            ("the operator still reads it", OPERATOR, W0, "TCP", 9400, True),
        ])

    def test_two_jobs_two_policies(self):
        m = netpol.Model(items(operator_job_policy("mingpt", ["ddp-system"]),
                               operator_job_policy("other", ["ddp-system"])), PODS, NAMESPACES)
        self.check_rows(m, [
            ("mingpt's worker cannot reach other's", W0, OTHER, "TCP", 29500, False),
            ("nor the reverse", OTHER, W0, "TCP", 29500, False),
            ("the operator reads both", OPERATOR, OTHER, "TCP", 9400, True),
        ])

    def test_the_charts_operator_policy_named_ports(self):
        for prom_ns, want_probe in (("prom", False), ("", True)):
            m = netpol.Model(items(chart_operator_policy(prom_ns)), PODS, NAMESPACES)
            self.check_rows(m, [
                ("health (no from): from any pod", PROBE, OPERATOR, "TCP", 8081, True),
                ("health (no from): from a node address", NODE, OPERATOR, "TCP", 8081, True),
                ("metrics from Prometheus' namespace", PROM, OPERATOR, "TCP", 8080, True),
                ("metrics from elsewhere: only when prometheusNamespace is empty (%r)" % prom_ns,
                 PROBE, OPERATOR, "TCP", 8080, want_probe),
                ("another port: refused", PROM, OPERATOR, "TCP", 9999, False),
                ("the named port is TCP: UDP 8081 refused", PROBE, OPERATOR, "UDP", 8081, False),
            ])


class Semantics(Case):
    def model(self, *policies, pods=PODS):
        return netpol.Model(items(*policies), pods, NAMESPACES)

    def test_selection(self):
        # An empty podSelector selects every pod of the policy's namespace, and only those.
        deny_ml = policy("ml", "deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
        self.check_rows(self.model(deny_ml), [
            ("no ingress rules: everything to the namespace's pods refused", W0, W1, "TCP", 29500, False),
            ("the pod of no job too", PROM, LONER, "TCP", 80, False),
            ("other namespaces untouched", W0, PROM, "TCP", 9090, True),
        ])
        # policyTypes absent and no egress: an ingress policy (the API server's default).
        self.check_rows(self.model(policy("ml", "d", {"podSelector": {"matchLabels": {"app": "loner"}}})), [
            ("policyTypes defaulted to Ingress: isolated", W0, LONER, "TCP", 80, False),
            ("the others untouched", LONER, W0, "TCP", 80, True),
        ])
        egress_only = policy("ml", "e", {"podSelector": {}, "policyTypes": ["Egress"], "egress": []})
        m = self.model(egress_only)
        self.check_rows(m, [("an Egress-only policy isolates nothing for ingress", PROBE, W0, "TCP", 9400, True)])
        self.assertEqual(m.egress_policies, ["ml/e"])

    def test_match_expressions(self):
        def sel(*exprs):
            return policy("ml", "x", {"podSelector": {"matchExpressions": list(exprs)}, "policyTypes": ["Ingress"]})
        rows = [
            ({"key": "ddp.dev/role", "operator": "In", "values": ["rendezvous"]}, {RDZV}),
            ({"key": "ddp.dev/role", "operator": "NotIn", "values": ["worker"]}, {RDZV, LONER}),
            ({"key": "ddp.dev/replica-index", "operator": "Exists"}, {W0, W1, OTHER}),
            ({"key": "ddp.dev/job-name", "operator": "DoesNotExist"}, {LONER}),
        ]
        for expr, isolated in rows:
            with self.subTest(expr["operator"]):
                self.assertEqual(set(self.model(sel(expr)).isolated), isolated)
        both = sel({"key": "ddp.dev/job-name", "operator": "In", "values": ["mingpt"]},
                   {"key": "ddp.dev/role", "operator": "In", "values": ["worker"]})
        self.assertEqual(set(self.model(both).isolated), {W0, W1}, "expressions AND")
        labels_and_expr = policy("ml", "x", {"podSelector": {
            "matchLabels": {"ddp.dev/job-name": "mingpt"},
            "matchExpressions": [{"key": "ddp.dev/role", "operator": "NotIn", "values": ["worker"]}]},
            "policyTypes": ["Ingress"]})
        self.assertEqual(set(self.model(labels_and_expr).isolated), {RDZV}, "matchLabels AND expressions")

    def test_peers(self):
        target = {"matchLabels": {"app": "loner"}}

        def allow(*peers):
            return policy("ml", "p", {"podSelector": target, "policyTypes": ["Ingress"],
                                      "ingress": [{"from": list(peers)}]})
        pods_only = allow({"podSelector": {"matchLabels": {"ddp.dev/role": "rendezvous"}}})
        self.check_rows(self.model(pods_only), [
            ("podSelector alone: pods of the policy's namespace", RDZV, LONER, "TCP", 80, True),
            ("podSelector alone: not a workers", W0, LONER, "TCP", 80, False),
        ])
        # The same labels in another namespace do not count for a podSelector alone.
        dev_rdzv = pod("dev", "fake-rdzv", "10.244.1.41", {"ddp.dev/role": "rendezvous"})
        self.check_rows(self.model(pods_only, pods=items(*PODS["items"], dev_rdzv)), [
            ("podSelector alone: not the same labels in another namespace", "10.244.1.41", LONER, "TCP", 80, False),
        ])
        ns_only = allow({"namespaceSelector": {"matchLabels": {"team": "obs"}}})
        self.check_rows(self.model(ns_only), [
            ("namespaceSelector alone: every pod of the namespace", PROM, LONER, "TCP", 80, True),
            ("namespaceSelector alone: not the policy's own namespace", W0, LONER, "TCP", 80, False),
        ])
        prom2 = pod("prom", "grafana", "10.244.0.31", {"app": "grafana"})
        with_pods = items(*PODS["items"], prom2)
        both = allow({"namespaceSelector": {"matchLabels": {"team": "obs"}},
                      "podSelector": {"matchLabels": {"app": "prometheus"}}})
        self.check_rows(self.model(both, pods=with_pods), [
            ("both in one peer: the pod matching both", PROM, LONER, "TCP", 80, True),
            ("both in one peer: not another pod of that namespace", "10.244.0.31", LONER, "TCP", 80, False),
        ])
        either = allow({"namespaceSelector": {"matchLabels": {"team": "obs"}}},
                       {"podSelector": {"matchLabels": {"app": "prometheus"}}})
        self.check_rows(self.model(either, pods=with_pods), [
            ("two peers are OR: any pod of the obs namespace", "10.244.0.31", LONER, "TCP", 80, True),
        ])
        any_ns = allow({"namespaceSelector": {}})
        self.check_rows(self.model(any_ns), [
            ("an empty namespaceSelector: pods of every namespace", PROBE, LONER, "TCP", 80, True),
            ("but not a node address", NODE, LONER, "TCP", 80, False),
        ])
        block = allow({"ipBlock": {"cidr": "10.244.1.0/24", "except": ["10.244.1.40/30"]}})
        self.check_rows(self.model(block), [
            ("ipBlock: an address inside", W1, LONER, "TCP", 80, True),
            ("ipBlock: an address in except", PROBE, LONER, "TCP", 80, False),
            ("ipBlock: the last address of except", "10.244.1.43", LONER, "TCP", 80, False),
            ("ipBlock: just past except", "10.244.1.44", LONER, "TCP", 80, True),
            ("ipBlock: an address outside", W0, LONER, "TCP", 80, False),
        ])
        no_from = policy("ml", "p", {"podSelector": target, "policyTypes": ["Ingress"],
                                     "ingress": [{"ports": [{"port": 80}]}]})
        self.check_rows(self.model(no_from), [
            ("a rule without from: any source", NODE, LONER, "TCP", 80, True),
            ("a rule without from: only its port", NODE, LONER, "TCP", 81, False),
        ])
        empty_from = policy("ml", "p", {"podSelector": target, "policyTypes": ["Ingress"],
                                        "ingress": [{"from": []}]})
        self.check_rows(self.model(empty_from), [("an empty from: any source", NODE, LONER, "UDP", 53, True)])

    def test_ports(self):
        target = {"matchLabels": {"ddp.dev/job-name": "mingpt"}}

        def allow(*ports):
            return policy("ml", "p", {"podSelector": target, "policyTypes": ["Ingress"],
                                      "ingress": [{"from": [{"namespaceSelector": {}}], "ports": list(ports)}]})
        self.check_rows(self.model(allow({"port": 9400})), [
            ("protocol defaults to TCP", PROBE, W0, "TCP", 9400, True),
            ("so UDP on that port is refused", PROBE, W0, "UDP", 9400, False),
        ])
        self.check_rows(self.model(allow({"port": "metrics"})), [
            ("a named port: the destination pod's containerPort of that name", PROBE, W1, "TCP", 9400, True),
            ("a named port: no other port", PROBE, W1, "TCP", 9401, False),
        ])
        # The same name resolves per pod: worker-1 declares it as 9500.
        pods = items(*[p for p in PODS["items"] if p["metadata"]["name"] != "mingpt-worker-1"],
                     pod("ml", "mingpt-worker-1", W1, job_labels("mingpt", index=1), (("metrics", 9500, "TCP"),)),
                     pod("ml", "mingpt-worker-2", "10.244.1.13", job_labels("mingpt", index=2)))
        self.check_rows(self.model(allow({"port": "metrics"}), pods=pods), [
            ("a named port resolves per pod (9500 on worker-1)", PROBE, W1, "TCP", 9500, True),
            ("not 9400 there", PROBE, W1, "TCP", 9400, False),
            ("9400 on worker-0", PROBE, W0, "TCP", 9400, True),
            ("a pod without the name: isolated, the rule admits nothing", PROBE, "10.244.1.13", "TCP", 9400, False),
        ])
        self.check_rows(self.model(allow({"protocol": "UDP"})), [
            ("a protocol without a port: every port of it", PROBE, W0, "UDP", 12345, True),
            ("not another protocol", PROBE, W0, "TCP", 12345, False),
        ])
        self.check_rows(self.model(allow({"port": 29400, "endPort": 29402})), [
            ("endPort: the first port", PROBE, W0, "TCP", 29400, True),
            ("endPort: the last port", PROBE, W0, "TCP", 29402, True),
            ("endPort: past it", PROBE, W0, "TCP", 29403, False),
        ])
        self.check_rows(self.model(allow({"port": 80}, {"port": 443})), [
            ("two ports: either", PROBE, W0, "TCP", 443, True),
        ])

    def test_only_running_pods_with_an_ip(self):
        deny = policy("ml", "deny", {"podSelector": {}, "policyTypes": ["Ingress"],
                                     "ingress": [{"from": [{"podSelector": {}}]}]})
        pods = items(*PODS["items"],
                     pod("ml", "starting", "10.244.0.60", phase="Pending"),
                     pod("ml", "host", "10.244.0.1", host_network=True))
        m = self.model(deny, pods=pods)
        self.assertNotIn("10.244.0.60", m.isolated, "a Pending pod is not isolated yet")
        self.assertNotIn("10.244.0.1", m.isolated, "a hostNetwork pod's IP is its node's")
        self.check_rows(m, [
            ("a Pending pod of the namespace is no source", "10.244.0.60", W0, "TCP", 80, False),
            ("a Running one is", LONER, W0, "TCP", 80, True),
        ])


class Rendering(unittest.TestCase):
    def setUp(self):
        self.model = netpol.Model(items(operator_job_policy("mingpt", ["ddp-system", "prom"]),
                                        chart_operator_policy("prom")), PODS, NAMESPACES)
        self.payload = self.model.render()

    def test_shape(self):
        lines = self.payload.splitlines()
        self.assertEqual(lines[:2], ["*filter", ":DDP-NETPOL - [0:0]"])
        self.assertEqual(lines[-1], "COMMIT")
        self.assertIn("--ctstate ESTABLISHED,RELATED -j RETURN", lines[2], "replies first")
        # Each isolated pod ends with its DROP, after its admitted traffic.
        drops = [i for i, l in enumerate(lines) if l.endswith("-j DROP")]
        self.assertEqual(len(drops), 4)  # 2 workers, the rendezvous pod, the operator
        for ip in (W0, W1, RDZV, OPERATOR):
            mine = [i for i, l in enumerate(lines) if " -d %s/32 " % ip in l]
            self.assertTrue(lines[mine[-1]].endswith("-j DROP"), ip)
        self.assertNotIn(" -d %s/32 " % PROM, self.payload, "a pod no policy selects has no rule")

    def test_replies_pass(self):
        self.assertTrue(chain_admits(self.payload, PROBE, W0, "TCP", 29500, established=True))

    def test_the_same_world_the_same_text(self):
        again = netpol.Model(items(chart_operator_policy("prom"), operator_job_policy("mingpt", ["ddp-system", "prom"])),
                             items(*reversed(PODS["items"])), NAMESPACES).render()
        self.assertEqual(again, self.payload, "order of the lists does not matter (no rewrite)")
        moved = items(*[p for p in PODS["items"] if p["metadata"]["name"] != "mingpt-worker-1"],
                      pod("ml", "mingpt-worker-1", "10.244.1.99", job_labels("mingpt", index=1), METRICS))
        self.assertNotEqual(netpol.Model(items(operator_job_policy("mingpt", ["ddp-system", "prom"]),
                                               chart_operator_policy("prom")), moved, NAMESPACES).render(),
                            self.payload, "a replaced pod's new IP is a new chain")

    @unittest.skipUnless(os.geteuid() == 0 and shutil.which("unshare") and shutil.which("iptables-restore"),
                         "needs root, unshare and iptables-restore")
    def test_iptables_restore_accepts_it(self):
        # In a private network namespace: the host's rules are not touched.
        script = ("iptables-restore --noflush && iptables -I FORWARD 1 -j DDP-NETPOL && "
                  "iptables -S DDP-NETPOL && iptables -C FORWARD -j DDP-NETPOL")
        r = subprocess.run(["unshare", "-n", "sh", "-c", script], input=self.payload,
                           capture_output=True, text=True)
        if r.returncode != 0 and re.search(r"(?i)operation not permitted|unshare failed", r.stderr):
            self.skipTest("cannot make a network namespace here: " + r.stderr.strip())
        self.assertEqual(r.returncode, 0, r.stderr)
        loaded = [l for l in r.stdout.splitlines() if l.startswith("-A DDP-NETPOL")]
        self.assertEqual(len(loaded), len([l for l in self.payload.splitlines() if l.startswith("-A ")]))


@unittest.skipUnless(os.geteuid() == 0 and all(shutil.which(t) for t in ("unshare", "nsenter", "ip", "iptables")),
                     "needs root, unshare, nsenter, ip and iptables")
class RunMode(unittest.TestCase):
    """`netpol.py run` as a process, against a fake kubectl, in a network and mount namespace of
    its own that holds a kit-9 network namespace (the host's rules and /run are not touched):
    the chain and its hook land in both, follow a pod's new IP, and are gone after SIGTERM."""

    def setUp(self):
        import json
        import tempfile
        self.json = json
        self.dir = tempfile.mkdtemp()
        kubectl = os.path.join(self.dir, "kubectl")
        with open(kubectl, "w") as f:
            f.write('#!/bin/sh\ncase "$2" in networkpolicies) f=policies ;; pods) f=pods ;; namespaces) f=namespaces ;;'
                    ' *) exit 1 ;; esac\nexec cat "%s/$f.json"\n' % self.dir)
        os.chmod(kubectl, 0o755)
        egress = policy("dev", "no-egress", {"podSelector": {}, "policyTypes": ["Egress"], "egress": []})
        self.write("policies", items(operator_job_policy("mingpt", ["ddp-system", "prom"]), egress))
        self.write("pods", PODS)
        self.write("namespaces", NAMESPACES)
        script = ('mount -t tmpfs tmpfs /run && ip netns add kit-9 || exit 3; '
                  'python3 %s run > %s/log 2>&1 & echo $! > %s/pid; wait $!; exec sleep 60'
                  % (shlex.quote(netpol.__file__), self.dir, self.dir))
        env = dict(os.environ, PATH=self.dir + ":" + os.environ["PATH"])
        self.holder = subprocess.Popen(["unshare", "-n", "-m", "--propagation", "private", "sh", "-c", script], env=env)

    def tearDown(self):
        self.holder.kill()
        self.holder.wait()
        shutil.rmtree(self.dir, ignore_errors=True)

    def write(self, name, obj):
        with open(os.path.join(self.dir, name + ".json.tmp"), "w") as f:
            self.json.dump(obj, f)
        os.replace(os.path.join(self.dir, name + ".json.tmp"), os.path.join(self.dir, name + ".json"))

    def rules(self, netns):
        cmd = ["nsenter", "-t", str(self.holder.pid), "-n", "-m"]
        cmd += (["ip", "netns", "exec", netns] if netns else [])
        chain = subprocess.run(cmd + ["iptables", "-S", "DDP-NETPOL"], capture_output=True, text=True)
        hook = subprocess.run(cmd + ["iptables", "-C", "FORWARD", "-j", "DDP-NETPOL"], capture_output=True)
        return chain.stdout if chain.returncode == 0 else None, hook.returncode == 0

    def wait_until(self, cond, what):
        import time
        deadline = time.time() + 30
        while time.time() < deadline:
            if self.holder.poll() is not None:
                self.fail("the namespace holder exited %s: %s" % (self.holder.returncode, self.log()))
            if cond():
                return
            time.sleep(0.2)
        self.fail("not within 30 s: %s\n%s\nhost: %s\nkit-9: %s"
                  % (what, self.log(), self.rules(None), self.rules("kit-9")))

    def log(self):
        try:
            with open(os.path.join(self.dir, "log")) as f:
                return f.read()
        except OSError:
            return "(no log)"

    def test_applies_follows_and_removes(self):
        def isolated(ip):
            def cond():
                for ns in (None, "kit-9"):
                    chain, hooked = self.rules(ns)
                    if not hooked or not chain or ("-d %s/32" % ip) not in chain or " -j DROP" not in chain:
                        return False
                return True
            return cond
        self.wait_until(isolated(W1), "worker-1 isolated in the host and in kit-9")
        want = [l for l in netpol.Model(items(operator_job_policy("mingpt", ["ddp-system", "prom"])), PODS,
                                        NAMESPACES).render().splitlines() if l.startswith("-A ")]
        for ns in (None, "kit-9"):
            chain, _ = self.rules(ns)
            self.assertEqual(len([l for l in chain.splitlines() if l.startswith("-A ")]), len(want), chain)
        # worker-1 replaced: a new IP.
        moved = items(*[p for p in PODS["items"] if p["metadata"]["name"] != "mingpt-worker-1"],
                      pod("ml", "mingpt-worker-1", "10.244.1.99", job_labels("mingpt", index=1), METRICS))
        self.write("pods", moved)
        self.wait_until(isolated("10.244.1.99"), "the new IP isolated")
        for ns in (None, "kit-9"):
            self.assertNotIn("-d %s/32" % W1, self.rules(ns)[0], "the old IP's rules are gone")
        self.assertIn("egress rules are not enforced", self.log())
        self.assertEqual(self.log().count("NOT enforced: the egress rules of dev/no-egress"), 1, self.log())
        with open(os.path.join(self.dir, "pid")) as f:
            os.kill(int(f.read()), 15)
        self.wait_until(lambda: all(self.rules(ns) == (None, False) for ns in (None, "kit-9")),
                        "no chain and no hook after SIGTERM")


if __name__ == "__main__":
    unittest.main()
