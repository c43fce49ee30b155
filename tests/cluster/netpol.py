#!/usr/bin/env python3
"""A minimal ingress NetworkPolicy enforcer for the test kit (tests/cluster; docs/metrics.md).

The kit's bridge CNI enforces no NetworkPolicy. This program stands in for the policy engine of a
CNI, for the end-to-end suite only: a test tool, not a CNI. It enforces INGRESS only, the v1
semantics the operator's and the chart's policies use; EGRESS rules are NOT enforced (a policy
with Egress in policyTypes is enforced for its ingress part, and the log says so once).

  netpol.py render POLICIES.json PODS.json NAMESPACES.json
      prints the iptables-restore --noflush payload for the output of `kubectl get
      networkpolicies -A -o json`, `kubectl get pods -A -o json`, `kubectl get namespaces -o json`.
  netpol.py run
      every second: reads those three lists with kubectl, and writes the chain (only when it
      changed, or its FORWARD hook is missing) into the host's iptables and into every network
      namespace /run/netns/kit-* (`ip netns exec NAME iptables-restore --noflush`). Runs until
      SIGTERM/SIGINT or until the process that started it is gone (a test killed outright leaves
      no rules behind for long), then removes what it wrote (as `stop`).
  netpol.py stop
      removes the chain and its FORWARD hook from the host and every kit-* namespace.

What it enforces (the decision is pure: Model, below): a Running pod with an IP (not
hostNetwork) selected by the podSelector of some policy with Ingress in policyTypes is isolated;
traffic to its IP passes only when some rule of those policies admits it: `from` peers podSelector
(the policy's namespace), namespaceSelector, both (pods matching both), ipBlock (cidr minus
except); a rule without `from` admits any source, one without `ports` every port and protocol;
ports by number, by name (the destination pod's containerPorts of that name and protocol) and
number ranges (endPort); protocol TCP by default; selectors with matchLabels and matchExpressions
(In, NotIn, Exists, DoesNotExist). Pods selected by no policy are untouched.

How: chain DDP-NETPOL in the filter table, jumped to first from FORWARD (pod-to-pod traffic on the
kit crosses FORWARD of the host or of a node's namespace, bridged traffic included with
net.bridge.bridge-nf-call-iptables=1). Replies (ESTABLISHED,RELATED) return at once; for each
isolated pod IP, the admitted (source, protocol, port) return, the rest is dropped. Admitted
traffic RETURNs rather than ACCEPTs, so the rest of FORWARD (kube-proxy's, the kit's) still
applies. Traffic a node sends its pods (kubelet probes) takes OUTPUT, which is not touched: a
pod's own node always reaches it, as the Kubernetes docs say of every implementation; the host is
another node to kit-1's pods, so its connections to them (the API server's pod proxy) are
filtered, as from any other node. Not covered: egress, IPv6, hostNetwork pods, a pod before it
is Running (it is isolated about a second after), and anything a CNI does beyond filtering.
tests/cluster/netpol_test.py checks the decisions, netpol_netns_test.sh real packets.
"""
import ipaddress
import json
import os
import signal
import subprocess
import sys
import time
from collections import namedtuple

CHAIN = "DDP-NETPOL"
NETNS_DIR = "/run/netns"
NETNS_PREFIX = "kit-"
# The label the API server sets on every namespace (Kubernetes >= 1.21) to its name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"

# One admitted kind of traffic to an isolated pod: src is None (any source) or a CIDR; proto None
# (every protocol, no port) or TCP/UDP/SCTP; port None (every port of proto) or a number, up to
# end_port when that is set. `why` names the policy (for the rule's comment).
Allow = namedtuple("Allow", "dst src proto port end_port why")
Pod = namedtuple("Pod", "namespace name ip labels ports")  # ports: {(name, proto): number}


# ---- selectors

def selector_matches(selector, labels):
    """A LabelSelector against a label map. An empty selector matches everything; an operator
    this does not know matches nothing (the API server refuses those anyway)."""
    if selector is None:
        return False
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for e in selector.get("matchExpressions") or []:
        key, op, values = e.get("key"), e.get("operator"), e.get("values") or []
        if op == "In":
            ok = key in labels and labels[key] in values
        elif op == "NotIn":
            ok = key not in labels or labels[key] not in values
        elif op == "Exists":
            ok = key in labels
        elif op == "DoesNotExist":
            ok = key not in labels
        else:
            return False
        if not ok:
            return False
    return True


# ---- the API's lists, reduced to what the decision needs

def read_pods(pods_json):
    """The Running pods with an IP that are not hostNetwork: the only ones a pod-IP rule can
    describe (a hostNetwork pod's IP is its node's)."""
    out = []
    for p in pods_json.get("items", []):
        meta, spec, status = p.get("metadata", {}), p.get("spec", {}), p.get("status", {})
        ip = status.get("podIP")
        if not ip or ":" in ip or status.get("phase") != "Running" or spec.get("hostNetwork"):
            continue  # (an IPv6 pod IP: not covered)
        ports = {}
        for c in spec.get("containers", []) + spec.get("initContainers", []):
            for cp in c.get("ports") or []:
                if cp.get("name"):
                    ports[(cp["name"], cp.get("protocol", "TCP"))] = cp["containerPort"]
        out.append(Pod(meta.get("namespace", ""), meta.get("name", ""), ip,
                       meta.get("labels") or {}, ports))
    return out


def read_namespaces(ns_json):
    out = {}
    for n in ns_json.get("items", []):
        name = n.get("metadata", {}).get("name", "")
        labels = dict(n.get("metadata", {}).get("labels") or {})
        labels.setdefault(NAMESPACE_NAME_LABEL, name)
        out[name] = labels
    return out


def policy_types(spec):
    """spec.policyTypes, defaulted as the API server does when it is absent."""
    types = spec.get("policyTypes")
    if types:
        return set(types)
    return {"Ingress", "Egress"} if spec.get("egress") else {"Ingress"}


# ---- the decision

def _cidrs_minus(cidr, excepts):
    nets = [ipaddress.ip_network(cidr, strict=False)]
    for ex in excepts or []:
        ex = ipaddress.ip_network(ex, strict=False)
        nxt = []
        for n in nets:
            if n.version != ex.version or not n.overlaps(ex):
                nxt.append(n)
            elif ex.supernet_of(n):
                continue
            else:
                nxt.extend(n.address_exclude(ex))
        nets = nxt
    return sorted(str(n) for n in nets)


def _peer_sources(peer, policy_ns, pods, namespaces):
    """The sources a `from` peer admits: a sorted list of CIDRs."""
    if "ipBlock" in peer:
        b = peer["ipBlock"]
        return [c for c in _cidrs_minus(b["cidr"], b.get("except")) if ":" not in c]
    pod_sel = peer.get("podSelector")
    ns_sel = peer.get("namespaceSelector")
    if ns_sel is None:
        in_ns = lambda ns: ns == policy_ns  # noqa: E731
    else:
        in_ns = lambda ns: selector_matches(ns_sel, namespaces.get(ns, {NAMESPACE_NAME_LABEL: ns}))  # noqa: E731
    out = set()
    for p in pods:
        if not in_ns(p.namespace):
            continue
        if pod_sel is not None and not selector_matches(pod_sel, p.labels):
            continue
        out.add(p.ip + "/32")
    return sorted(out)


def _rule_ports(rule, dst):
    """(proto, port, end_port) tuples a rule admits on pod `dst`; [(None, None, None)]: all."""
    ports = rule.get("ports")
    if not ports:
        return [(None, None, None)]
    out = []
    for p in ports:
        proto = p.get("protocol") or "TCP"
        port = p.get("port")
        if port is None:
            out.append((proto, None, None))
        elif isinstance(port, str) and not port.isdigit():
            number = dst.ports.get((port, proto))
            if number is not None:  # a pod without that named port admits nothing by it
                out.append((proto, number, None))
        else:
            end = p.get("endPort")
            out.append((proto, int(port), int(end) if end is not None and int(end) > int(port) else None))
    return out


class Model:
    """The allowed set: isolated pod IPs and the Allow tuples of each. Pure."""

    def __init__(self, policies_json, pods_json, ns_json):
        self.pods = read_pods(pods_json)
        self.namespaces = read_namespaces(ns_json)
        self.isolated = {}  # ip -> "ns/name" of the pod
        self.allows = []
        self.egress_policies = []
        for pol in policies_json.get("items", []):
            meta, spec = pol.get("metadata", {}), pol.get("spec", {})
            ns, pname = meta.get("namespace", ""), meta.get("name", "")
            types = policy_types(spec)
            if "Egress" in types:
                self.egress_policies.append(ns + "/" + pname)
            if "Ingress" not in types:
                continue
            selected = [p for p in self.pods
                        if p.namespace == ns and selector_matches(spec.get("podSelector") or {}, p.labels)]
            for dst in selected:
                self.isolated[dst.ip] = dst.namespace + "/" + dst.name
                for rule in spec.get("ingress") or []:
                    peers = rule.get("from")
                    if peers:
                        srcs = sorted({s for peer in peers
                                       for s in _peer_sources(peer, ns, self.pods, self.namespaces)})
                    else:
                        srcs = [None]
                    for proto, port, end in _rule_ports(rule, dst):
                        for s in srcs:
                            self.allows.append(Allow(dst.ip, s, proto, port, end, ns + "/" + pname))
        self.allows = sorted(set(self.allows), key=lambda a: (
            a.dst, a.src or "", a.proto or "", a.port or 0, a.end_port or 0, a.why))

    def admits(self, src, dst, proto, port):
        """Whether a new connection src -> dst:port/proto passes."""
        if dst not in self.isolated:
            return True
        s = ipaddress.ip_address(src)
        for a in self.allows:
            if a.dst != dst:
                continue
            if a.src is not None and s not in ipaddress.ip_network(a.src):
                continue
            if a.proto is not None and a.proto != proto:
                continue
            if a.port is not None and not (a.port <= port <= (a.end_port or a.port)):
                continue
            return True
        return False

    def render(self):
        """The iptables-restore --noflush payload: declaring the chain flushes it, so the whole
        chain is replaced in one transaction. The FORWARD hook is the adapter's (hook_args)."""
        lines = ["*filter", ":%s - [0:0]" % CHAIN,
                 "-A %s -m conntrack --ctstate ESTABLISHED,RELATED -j RETURN" % CHAIN]
        by_dst = {}
        for a in self.allows:
            by_dst.setdefault(a.dst, []).append(a)
        for dst in sorted(self.isolated, key=ipaddress.ip_address):
            for a in by_dst.get(dst, []):
                r = "-A %s -d %s/32" % (CHAIN, dst)
                if a.src is not None:
                    r += " -s " + a.src
                if a.proto is not None:
                    r += " -p " + a.proto.lower()
                    if a.port is not None:
                        r += " -m %s --dport %d" % (a.proto.lower(), a.port)
                        if a.end_port:
                            r += ":%d" % a.end_port
                r += ' -m comment --comment "%s" -j RETURN' % a.why
                lines.append(r)
            lines.append('-A %s -d %s/32 -m comment --comment "isolated %s" -j DROP'
                         % (CHAIN, dst, self.isolated[dst]))
        lines.append("COMMIT")
        return "\n".join(lines) + "\n"


# ---- the adapter: kubectl and iptables

HOOK = ["FORWARD", "-j", CHAIN]


def log(msg):
    print("[netpol %s] %s" % (time.strftime("%H:%M:%S"), msg), flush=True)


def namespaces_to_enforce():
    """None (the host's) and each kit-* network namespace."""
    out = [None]
    try:
        out += sorted(n for n in os.listdir(NETNS_DIR) if n.startswith(NETNS_PREFIX))
    except OSError:
        pass
    return out


def _cmd(netns, argv):
    return (["ip", "netns", "exec", netns] if netns else []) + argv


def _run(netns, argv, stdin=None):
    return subprocess.run(_cmd(netns, argv), input=stdin, capture_output=True, text=True)


def apply(netns, payload):
    """Writes the chain, then hooks it first in FORWARD when it is not hooked. True on success."""
    r = _run(netns, ["iptables-restore", "--noflush"], payload)
    if r.returncode != 0:
        log("iptables-restore in %s failed: %s" % (netns or "the host", r.stderr.strip()))
        return False
    if _run(netns, ["iptables", "-C"] + HOOK).returncode != 0:
        r = _run(netns, ["iptables", "-I", HOOK[0], "1"] + HOOK[1:])
        if r.returncode != 0:
            log("hooking %s in %s failed: %s" % (CHAIN, netns or "the host", r.stderr.strip()))
            return False
    return True


def hooked(netns):
    return _run(netns, ["iptables", "-C"] + HOOK).returncode == 0


def remove(netns):
    while _run(netns, ["iptables", "-D"] + HOOK).returncode == 0:
        pass
    _run(netns, ["iptables", "-F", CHAIN])
    _run(netns, ["iptables", "-X", CHAIN])


def kubectl_json(*args):
    r = subprocess.run(["kubectl", "get"] + list(args) + ["-o", "json"], capture_output=True,
                       text=True, timeout=20)
    if r.returncode != 0:
        raise RuntimeError("kubectl get %s: %s" % (" ".join(args), r.stderr.strip()))
    return json.loads(r.stdout)


def run():
    stopping = []
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopping.append(1))
    written = {}  # netns -> payload last written
    warned_egress = False
    parent = os.getppid()
    log("enforcing the INGRESS rules of NetworkPolicies in the host and %s* network namespaces "
        "(egress rules are not enforced)" % NETNS_PREFIX)
    while not stopping:
        if os.getppid() != parent:
            log("the process that started me (pid %d) is gone: stopping" % parent)
            break
        try:
            model = Model(kubectl_json("networkpolicies", "-A"), kubectl_json("pods", "-A"),
                          kubectl_json("namespaces"))
        except (RuntimeError, ValueError, subprocess.TimeoutExpired) as e:
            log("cannot read the API, keeping the rules as they are: %s" % e)
            time.sleep(1)
            continue
        if model.egress_policies and not warned_egress:
            log("NOT enforced: the egress rules of %s" % ", ".join(sorted(model.egress_policies)))
            warned_egress = True
        payload = model.render()
        for netns in namespaces_to_enforce():
            if written.get(netns) == payload and hooked(netns):
                continue
            if apply(netns, payload):
                if written.get(netns) != payload:
                    log("%s: %d isolated pods, %d admitted (source, port) rules"
                        % (netns or "host", len(model.isolated), len(model.allows)))
                written[netns] = payload
            else:
                written.pop(netns, None)
        time.sleep(1)
    stop()
    return 0


def stop():
    for netns in namespaces_to_enforce():
        remove(netns)
    log("removed %s and its FORWARD hook from the host and the %s* namespaces" % (CHAIN, NETNS_PREFIX))
    return 0


def main(argv):
    if len(argv) == 5 and argv[1] == "render":
        docs = []
        for path in argv[2:5]:
            with open(path) as f:
                docs.append(json.load(f))
        sys.stdout.write(Model(*docs).render())
        return 0
    if len(argv) == 2 and argv[1] == "run":
        return run()
    if len(argv) == 2 and argv[1] == "stop":
        return stop()
    sys.stderr.write(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
