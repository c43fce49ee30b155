#!/usr/bin/env bash
# shellcheck disable=SC2317  # functions called through check and the traps
# tests/cluster/netpol.py against real packets, in the kit's topology rebuilt in network
# namespaces of a private network and mount namespace (the machine's own rules, bridges and /run
# are not touched): "kit-0" is that namespace, with bridge cni0 (10.244.0.0/24) and two pods on
# it; "kit-1" is network namespace kit-1 behind a veth, with bridge cni1 (10.244.1.0/24) and one
# pod. A fake kubectl serves the operator's policy for job mingpt with Prometheus' namespace
# admitted. Checked: before the enforcer everything connects; with it, a pod of another namespace
# is dropped at a worker's metrics port on the same bridge (bridged traffic, br_netfilter) and on
# the other node (routed through both FORWARD chains), Prometheus' pod is let in there and not to
# other ports, job pods reach each other across nodes, the node itself reaches its pod (OUTPUT),
# an unprotected pod stays reachable; after SIGTERM everything connects again.
# Exit 0: passed; 1: a check failed; 77: skipped (not root, no unshare/ip/iptables/python3,
# or no br_netfilter). Usage: netpol_netns_test.sh [SOURCE_DIR]
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/../.." && pwd)}
[ "$(id -u)" = 0 ] || { echo "SKIPPED: not root"; exit 77; }
for t in unshare ip iptables iptables-restore python3 timeout; do
  command -v "$t" >/dev/null 2>&1 || { echo "SKIPPED: no $t"; exit 77; }
done
[ -e /proc/sys/net/bridge/bridge-nf-call-iptables ] || { echo "SKIPPED: no br_netfilter (modprobe br_netfilter)"; exit 77; }

if [ "${NETPOL_NETNS_INSIDE:-}" != 1 ]; then
  NETPOL_NETNS_INSIDE=1 exec timeout 120 unshare -n -m --propagation private bash "$0" "$root"
fi

# ---- inside: a network and mount namespace of our own.
mount -t tmpfs tmpfs /run || { echo "SKIPPED: cannot mount a tmpfs on /run here"; exit 77; }
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done; rm -rf "$work"; }
trap cleanup EXIT
trap 'exit 1' TERM INT
failed=0
check() { local name=$1; shift; if "$@"; then echo "ok   $name"; else echo "FAIL $name"; failed=1; fi; }
die() { echo "FAILED: $*"; exit 1; }

ip link set lo up
sysctl -qw net.ipv4.ip_forward=1
# pod NETNS BRIDGE_NS BRIDGE IP GW: a network namespace on BRIDGE (in BRIDGE_NS, "" = here).
pod() {
  local name=$1 bns=$2 br=$3 addr=$4 gw=$5 in=()
  [ -z "$bns" ] || in=(ip netns exec "$bns")
  ip netns add "$name"
  ip link add "v-$name" type veth peer name eth0 netns "$name"
  [ -z "$bns" ] || ip link set "v-$name" netns "$bns"
  "${in[@]}" ip link set "v-$name" master "$br" up
  ip netns exec "$name" ip link set lo up
  ip netns exec "$name" ip addr add "$addr/24" dev eth0
  ip netns exec "$name" ip link set eth0 up
  ip netns exec "$name" ip route add default via "$gw"
}
{
  ip link add cni0 type bridge && ip addr add 10.244.0.1/24 dev cni0 && ip link set cni0 up
  ip netns add kit-1
  ip link add kit-1 type veth peer name eth0 netns kit-1
  ip addr add 10.99.0.1/30 dev kit-1 && ip link set kit-1 up
  ip netns exec kit-1 sh -c 'ip link set lo up && ip addr add 10.99.0.2/30 dev eth0 && ip link set eth0 up &&
    sysctl -qw net.ipv4.ip_forward=1 && ip link add cni1 type bridge && ip addr add 10.244.1.1/24 dev cni1 &&
    ip link set cni1 up && ip route add 10.244.0.0/16 via 10.99.0.1'
  ip route add 10.244.1.0/24 via 10.99.0.2
  pod w0 "" cni0 10.244.0.10 10.244.0.1      # ml/mingpt-worker-0 on kit-0
  pod prom "" cni0 10.244.0.30 10.244.0.1    # prom/prometheus-0 on kit-0
  pod probe "" cni0 10.244.0.40 10.244.0.1   # dev/probe on kit-0
  pod w1 kit-1 cni1 10.244.1.11 10.244.1.1   # ml/mingpt-worker-1 on kit-1
} || die "building the namespaces failed"
for ns in "" kit-1; do
  v=$(${ns:+ip netns exec "$ns"} cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null || cat /proc/sys/net/bridge/bridge-nf-call-iptables)
  [ "$v" = 1 ] || { echo "SKIPPED: bridge-nf-call-iptables is $v in ${ns:-the test namespace}"; exit 77; }
done

# Listeners: the workers on 9400 (metrics) and 29500 (store), Prometheus on 9090. Each says it
# is listening on every port (a file) before any check: under load, python3 can take seconds.
listen() {
  ip netns exec "$1" python3 -c '
import socket, sys, threading
def serve(s):
    while True:
        c, _ = s.accept(); c.close()
for p in sys.argv[2:]:
    s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("0.0.0.0", int(p))); s.listen(16)
    threading.Thread(target=serve, args=(s,), daemon=True).start()
open(sys.argv[1], "w").close()
threading.Event().wait()' "$work/listening-$1" "${@:2}" &
  pids+=($!)
}
listen w0 9400 29500; listen w1 9400 29500; listen prom 9090
for n in w0 w1 prom; do
  for _ in $(seq 300); do [ -e "$work/listening-$n" ] && break; sleep 0.1; done
  [ -e "$work/listening-$n" ] || die "the listener in $n did not start within 30 s"
done
# conn SECONDS FROM_NETNS|host IP PORT: 0 connected, 124 no answer within SECONDS (dropped),
# else refused. A connection that passes is given longer: under load bash itself starts slowly.
conn() {
  local in=() t=$1; shift
  [ "$1" = host ] || in=(ip netns exec "$1")
  "${in[@]}" timeout "$t" bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}
passes() { conn 10 "$@"; }
dropped() { conn 2 "$@"; [ $? = 124 ]; }

# The fake API: kubectl get networkpolicies|pods|namespaces -A -o json.
mkdir -p "$work/bin"
cat > "$work/bin/kubectl" <<EOF
#!/bin/sh
case "\$2" in networkpolicies) f=policies ;; pods) f=pods ;; namespaces) f=namespaces ;; *) exit 1 ;; esac
exec cat "$work/\$f.json"
EOF
chmod +x "$work/bin/kubectl"
python3 - "$work" <<'EOF'
import json, sys
d = sys.argv[1]
def ns(n): return {"metadata": {"name": n, "labels": {"kubernetes.io/metadata.name": n}}}
def pod(ns, name, ip, labels):
    return {"metadata": {"namespace": ns, "name": name, "labels": labels},
            "spec": {"containers": [{"name": "c", "ports": [{"name": "metrics", "containerPort": 9400}]}]},
            "status": {"phase": "Running", "podIP": ip}}
job = {"ddp.dev/job-name": "mingpt"}
# The operator's policy for job mingpt (operator/plan/network_policy.cc, docs/security.md).
policy = {"metadata": {"namespace": "ml", "name": "mingpt"},
          "spec": {"podSelector": {"matchLabels": job}, "policyTypes": ["Ingress"], "ingress": [
              {"from": [{"podSelector": {"matchLabels": job}}]},
              {"from": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": n}}}
                        for n in ("ddp-system", "prom")],
               "ports": [{"protocol": "TCP", "port": 9400}]}]}}
for name, obj in (("policies", [policy]),
                  ("pods", [pod("ml", "mingpt-worker-0", "10.244.0.10", job),
                            pod("ml", "mingpt-worker-1", "10.244.1.11", job),
                            pod("prom", "prometheus-0", "10.244.0.30", {"app": "prometheus"}),
                            pod("dev", "probe", "10.244.0.40", {"app": "probe"})]),
                  ("namespaces", [ns(n) for n in ("ml", "prom", "dev", "ddp-system")])):
    json.dump({"items": obj}, open("%s/%s.json" % (d, name), "w"))
EOF

check "before the enforcer: another namespace reaches worker-0's metrics port" passes probe 10.244.0.10 9400
check "before the enforcer: and worker-1's, on the other node" passes probe 10.244.1.11 9400

PATH=$work/bin:$PATH python3 "$root/tests/cluster/netpol.py" run > "$work/log" 2>&1 &
np=$!
pids+=("$np")
for _ in $(seq 300); do
  iptables -C FORWARD -j DDP-NETPOL 2>/dev/null && ip netns exec kit-1 iptables -C FORWARD -j DDP-NETPOL 2>/dev/null && break
  sleep 0.1
done
check "the chain is hooked here and in kit-1" bash -c 'iptables -C FORWARD -j DDP-NETPOL && ip netns exec kit-1 iptables -C FORWARD -j DDP-NETPOL'

check "another namespace -> worker-0:9400 on its bridge: dropped" dropped probe 10.244.0.10 9400
check "another namespace -> worker-1:9400 on the other node: dropped" dropped probe 10.244.1.11 9400
check "Prometheus' namespace -> worker-0:9400 on its bridge: passes" passes prom 10.244.0.10 9400
check "Prometheus' namespace -> worker-1:9400 on the other node: passes" passes prom 10.244.1.11 9400
check "Prometheus' namespace -> worker-1:29500: dropped" dropped prom 10.244.1.11 29500
check "worker-0 -> worker-1:29500 (the job's pods, across nodes): passes" passes w0 10.244.1.11 29500
check "worker-1 -> worker-0:9400 (back): passes" passes w1 10.244.0.10 9400
check "the node -> its pod worker-0:9400 (OUTPUT, as kubelet probes): passes" passes host 10.244.0.10 9400
check "another namespace -> Prometheus:9090 (selected by no policy): passes" passes probe 10.244.0.30 9090

kill "$np"
for _ in $(seq 300); do kill -0 "$np" 2>/dev/null || break; sleep 0.1; done
check "after SIGTERM: no chain here or in kit-1" bash -c '! iptables -S DDP-NETPOL 2>/dev/null && ! ip netns exec kit-1 iptables -S DDP-NETPOL 2>/dev/null'
check "after SIGTERM: another namespace reaches worker-1's metrics port again" passes probe 10.244.1.11 9400
[ "$failed" = 0 ] || { echo "netpol.py's log:"; cat "$work/log"; }
exit "$failed"
