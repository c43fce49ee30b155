#!/usr/bin/env bash
# Volcano on a test cluster, from its own source: its scheduler, controller manager and admission
# webhook run as processes on this machine against the cluster in KUBECONFIG (as the kit's
# control plane does), with the CRDs, the scheduler configuration and the webhook configurations
# of the same tag. docs/volcano.md says how the e2e suite uses it.
#
#   volcano.sh build SNAPSHOT [REF]   extract REF (v1.7.0) of SNAPSHOT (a git directory of
#                                     volcano-sh/volcano, or a source tree with vendor/) and
#                                     build vc-scheduler, vc-controller-manager and
#                                     vc-webhook-manager offline (Go 1.18 or later, vendored)
#   volcano.sh up                     install the CRDs and the webhook configurations, start the
#                                     three processes; the `default` Queue is Open when it returns
#   volcano.sh down                   remove the webhook configurations, stop the processes (the
#                                     CRDs, Queues and PodGroups stay)
#   volcano.sh status
#
# The webhook listens on 127.0.0.1 with a certificate of its own CA (made here with openssl) and
# the API server calls it by URL instead of through a Service. Its configurations apply only to
# namespaces labelled ddp.dev/volcano-admission=enabled (VOLCANO_WEBHOOK_ALL=1: to every
# namespace but kube-system and volcano-system, as Volcano's installer has it): the webhooks fail
# closed, and on a shared test cluster a stopped webhook must not refuse other namespaces' pods.
#
# Ports (127.0.0.1): VOLCANO_WEBHOOK_PORT 18443, VOLCANO_METRICS_PORT 18080,
# VOLCANO_HEALTHZ_PORT 18081, VOLCANO_CM_HEALTHZ_PORT 18082.
set -euo pipefail
GANG_NAME=volcano
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gang_dirs

WEBHOOK_PORT=${VOLCANO_WEBHOOK_PORT:-18443} METRICS_PORT=${VOLCANO_METRICS_PORT:-18080}
HEALTHZ_PORT=${VOLCANO_HEALTHZ_PORT:-18081} CM_HEALTHZ_PORT=${VOLCANO_CM_HEALTHZ_PORT:-18082}
NS_LABEL=ddp.dev/volcano-admission
PROCS="webhook-manager scheduler controller-manager"

cmd_build() {
  local snap=${1:-} ref=${2:-v1.7.0} commit v=volcano.sh/volcano/pkg/version
  [ -n "$snap" ] || die "usage: volcano.sh build SNAPSHOT [REF]"
  export_source "$snap" "$ref"
  commit=$(cat "$SRC/.gang-commit")
  go_build "-s -w -X $v.GitSHA=$commit -X $v.Version=$ref -X $v.Built=$(date -u +%FT%TZ)" "$BIN/" \
    ./cmd/scheduler ./cmd/controller-manager ./cmd/webhook-manager
  # What `up` installs, from the same tag: the CRDs, the scheduler configuration of the
  # installer (its ConfigMap volcano-scheduler-configmap) and the webhook configurations.
  rm -rf "$ETC/crds"; mkdir -p "$ETC/crds"; cp "$SRC"/config/crd/bases/*.yaml "$ETC/crds/"
  local inst=$SRC/installer/volcano-development.yaml
  awk '/^  volcano-scheduler.conf: \|/ {on = 1; next} on && /^---/ {exit} on {sub(/^    /, ""); print}' \
    "$inst" >"$ETC/volcano-scheduler.conf"
  awk 'function flush() { if (doc ~ /\nkind: (Mutating|Validating)WebhookConfiguration\n/) printf "---%s\n", doc; doc = "" }
       /^---/ {flush(); next} {doc = doc "\n" $0} END {flush(); print ""}' "$inst" >"$ETC/webhooks.yaml"
  grep -q 'actions:' "$ETC/volcano-scheduler.conf" || die "no scheduler configuration found in $inst"
  [ "$(grep -c '^kind: .*WebhookConfiguration' "$ETC/webhooks.yaml")" -ge 5 ] || die "no webhook configurations found in $inst"
  echo "$ref $commit" >"$BIN/.gang-commit"
  say "built $(cat "$BIN/.gang-commit") into $BIN: $(cd "$BIN" && ls | xargs)"
}

# The webhook's CA and serving certificate (127.0.0.1), once.
make_pki() {
  local d=$ETC/pki
  [ -f "$d/tls.crt" ] && return 0
  need openssl; mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=volcano-admission-ca" \
    -keyout "$d/ca.key" -out "$d/ca.crt" 2>/dev/null
  openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" -keyout "$d/tls.key" -out "$d/tls.csr" 2>/dev/null
  printf 'subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n' >"$d/ext.cnf"
  openssl x509 -req -in "$d/tls.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 3650 \
    -extfile "$d/ext.cnf" -out "$d/tls.crt" 2>/dev/null
  say "webhook certificate for 127.0.0.1 in $d"
}

# The snapshot's webhook configurations with the URL of the local webhook and its CA, and the
# namespace selector narrowed to opted-in namespaces (unless VOLCANO_WEBHOOK_ALL=1).
webhook_configs() {
  need python3
  kubectl create --dry-run=client -o json -f "$ETC/webhooks.yaml" | python3 -c '
import base64, json, sys
url, ca, label, narrow = sys.argv[1], open(sys.argv[2], "rb").read(), sys.argv[3], sys.argv[4] == "1"
# kubectl prints one JSON object per document, one after the other (a List when it is one).
text, pos, items, dec = sys.stdin.read(), 0, [], json.JSONDecoder()
while text[pos:].strip():
    obj, pos = dec.raw_decode(text, len(text) - len(text[pos:].lstrip()))
    items += obj.get("items", [obj])
doc = {"apiVersion": "v1", "kind": "List", "items": items}
for item in items:
    for w in item["webhooks"]:
        path = w["clientConfig"]["service"]["path"]
        w["clientConfig"] = {"url": url + path, "caBundle": base64.b64encode(ca).decode()}
        if narrow:
            w.setdefault("namespaceSelector", {})["matchLabels"] = {label: "enabled"}
json.dump(doc, sys.stdout)
' "https://127.0.0.1:$WEBHOOK_PORT" "$ETC/pki/ca.crt" "$NS_LABEL" "$([ "${VOLCANO_WEBHOOK_ALL:-0}" = 1 ] && echo 0 || echo 1)"
}

queue_open() { [ "$(kubectl get queues.scheduling.volcano.sh default -o jsonpath='{.status.state}' 2>/dev/null)" = Open ]; }

cmd_up() {
  local b
  for b in scheduler controller-manager webhook-manager; do
    [ -x "$BIN/$b" ] || die "no $BIN/$b: run 'volcano.sh build SNAPSHOT' first"
  done
  need_cluster
  say "CRDs of $(cat "$BIN/.gang-commit")"
  kubectl apply --server-side --force-conflicts -f "$ETC/crds/" >/dev/null || die "applying the CRDs failed"
  kubectl wait --for=condition=Established --timeout=60s -f "$ETC/crds/" >/dev/null || die "the CRDs are not Established"
  make_pki
  proc_pid webhook-manager >/dev/null || port_free "$WEBHOOK_PORT" webhook VOLCANO_WEBHOOK_PORT
  webhook_configs | kubectl apply -f - >/dev/null || die "applying the webhook configurations failed"
  start webhook-manager "$BIN/webhook-manager" --kubeconfig="$KUBECONFIG" \
    --tls-cert-file="$ETC/pki/tls.crt" --tls-private-key-file="$ETC/pki/tls.key" --ca-cert-file="$ETC/pki/ca.crt" \
    --listen-address=127.0.0.1 --port="$WEBHOOK_PORT" --webhook-url="https://127.0.0.1:$WEBHOOK_PORT" \
    --logtostderr -v=3
  wait_until 60 curl -s --cacert "$ETC/pki/ca.crt" -o /dev/null "https://127.0.0.1:$WEBHOOK_PORT/" \
    || { alive webhook-manager 1; die "the webhook does not answer on 127.0.0.1:$WEBHOOK_PORT"; }
  proc_pid scheduler >/dev/null || { port_free "$METRICS_PORT" scheduler VOLCANO_METRICS_PORT; port_free "$HEALTHZ_PORT" scheduler VOLCANO_HEALTHZ_PORT; }
  start scheduler "$BIN/scheduler" --kubeconfig="$KUBECONFIG" --scheduler-conf="$ETC/volcano-scheduler.conf" \
    --leader-elect=false --listen-address="127.0.0.1:$METRICS_PORT" --enable-healthz=true \
    --healthz-address="127.0.0.1:$HEALTHZ_PORT" --logtostderr -v=3
  proc_pid controller-manager >/dev/null || port_free "$CM_HEALTHZ_PORT" controller-manager VOLCANO_CM_HEALTHZ_PORT
  start controller-manager "$BIN/controller-manager" --kubeconfig="$KUBECONFIG" --leader-elect=false \
    --enable-healthz=true --healthz-address="127.0.0.1:$CM_HEALTHZ_PORT" --logtostderr -v=3
  alive scheduler 3; alive controller-manager 1
  wait_until 60 queue_open || die "Queue default is not Open after 60 s (logs in $LOGS)"
  say "up: Queue default Open; pods with schedulerName volcano are Volcano's$([ "${VOLCANO_WEBHOOK_ALL:-0}" = 1 ] || echo "; the webhooks admit namespaces labelled $NS_LABEL=enabled")"
}

cmd_down() {
  local n
  if [ -f "$ETC/webhooks.yaml" ] && command -v kubectl >/dev/null && kubectl get --raw /readyz >/dev/null 2>&1; then
    kubectl delete --ignore-not-found -f "$ETC/webhooks.yaml" >/dev/null && say "webhook configurations removed"
  fi
  for n in controller-manager scheduler webhook-manager; do stop "$n"; done
}

cmd_status() {
  echo "volcano ($GANG_DIR/volcano):"
  status_procs $PROCS
  if command -v kubectl >/dev/null && kubectl get --raw /readyz >/dev/null 2>&1; then
    echo "  Queue default: $(kubectl get queues.scheduling.volcano.sh default -o jsonpath='{.status.state}' 2>/dev/null || echo absent)"
    echo "  webhook configurations: $(kubectl get mutatingwebhookconfigurations,validatingwebhookconfigurations -o name 2>/dev/null | grep -c volcano-admission)"
  fi
}

case ${1:-} in
  build) shift; cmd_build "$@" ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '7,17s/^# \{0,1\}//p' "$0"; exit 2 ;;
esac
