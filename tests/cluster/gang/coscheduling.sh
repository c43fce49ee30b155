#!/usr/bin/env bash
# The coscheduling plugin of scheduler-plugins on a test cluster, from its own source: its
# kube-scheduler build, run as a second scheduler with one profile that enables the plugin, and
# its controller (PodGroup status), as processes on this machine against the cluster in
# KUBECONFIG (as the kit's control plane does), with the CRDs of the same tag.
# docs/coscheduling.md says how the e2e suite uses it.
#
#   coscheduling.sh build SNAPSHOT [REF]  extract REF (v0.26.7) of SNAPSHOT (a git directory of
#                                         kubernetes-sigs/scheduler-plugins, or a source tree
#                                         with vendor/) and build kube-scheduler and the
#                                         controller offline (Go 1.19, vendored)
#   coscheduling.sh up                    install the CRDs (PodGroup, ElasticQuota: the
#                                         controller watches both), start both processes
#   coscheduling.sh down                  stop them (the CRDs and PodGroups stay)
#   coscheduling.sh status
#
# The profile is the project chart's default scheduler name, scheduler-plugins-scheduler
# (COSCHEDULING_NAME), configured as scheduler-plugins' own chart does (Coscheduling through
# multiPoint, PrioritySort off, permitWaitingTimeSeconds COSCHEDULING_PERMIT_WAIT, 10).
# Ports (127.0.0.1): COSCHEDULING_PORT 18259 (the scheduler's secure port),
# COSCHEDULING_METRICS_PORT 18083, COSCHEDULING_PROBE_PORT 18084 (the controller's).
set -euo pipefail
GANG_NAME=coscheduling
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"
gang_dirs

NAME=${COSCHEDULING_NAME:-scheduler-plugins-scheduler}
PORT=${COSCHEDULING_PORT:-18259} METRICS_PORT=${COSCHEDULING_METRICS_PORT:-18083}
PROBE_PORT=${COSCHEDULING_PROBE_PORT:-18084} PERMIT_WAIT=${COSCHEDULING_PERMIT_WAIT:-10}

cmd_build() {
  local snap=${1:-} ref=${2:-v0.26.7} commit
  [ -n "$snap" ] || die "usage: coscheduling.sh build SNAPSHOT [REF]"
  export_source "$snap" "$ref"
  commit=$(cat "$SRC/.gang-commit")
  go_build "-s -w -X k8s.io/component-base/version.gitVersion=$ref -X k8s.io/component-base/version.gitCommit=$commit" \
    "$BIN/" ./cmd/scheduler ./cmd/controller
  rm -rf "$ETC/crds"; mkdir -p "$ETC/crds"
  cp "$SRC"/manifests/crds/scheduling.x-k8s.io_podgroups.yaml "$SRC"/manifests/crds/scheduling.x-k8s.io_elasticquotas.yaml "$ETC/crds/"
  echo "$ref $commit" >"$BIN/.gang-commit"
  say "built $(cat "$BIN/.gang-commit") into $BIN: $(cd "$BIN" && ls | xargs)"
}

write_config() {
  cat >"$ETC/scheduler-config.yaml" <<CFG
apiVersion: kubescheduler.config.k8s.io/v1beta3
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: false
clientConnection:
  kubeconfig: "$KUBECONFIG"
profiles:
  - schedulerName: $NAME
    plugins:
      multiPoint:
        enabled:
          - name: Coscheduling
        disabled:
          - name: PrioritySort
    pluginConfig:
      - name: Coscheduling
        args:
          permitWaitingTimeSeconds: $PERMIT_WAIT
CFG
}

cmd_up() {
  local b
  for b in scheduler controller; do [ -x "$BIN/$b" ] || die "no $BIN/$b: run 'coscheduling.sh build SNAPSHOT' first"; done
  need_cluster
  say "CRDs of $(cat "$BIN/.gang-commit")"
  kubectl apply --server-side --force-conflicts -f "$ETC/crds/" >/dev/null || die "applying the CRDs failed"
  kubectl wait --for=condition=Established --timeout=60s -f "$ETC/crds/" >/dev/null || die "the CRDs are not Established"
  write_config
  proc_pid controller >/dev/null || { port_free "$METRICS_PORT" controller COSCHEDULING_METRICS_PORT; port_free "$PROBE_PORT" controller COSCHEDULING_PROBE_PORT; }
  start controller "$BIN/controller" --kubeconfig="$KUBECONFIG" --metricsAddr="127.0.0.1:$METRICS_PORT" \
    --probeAddr="127.0.0.1:$PROBE_PORT"
  proc_pid scheduler >/dev/null || port_free "$PORT" scheduler COSCHEDULING_PORT
  start scheduler "$BIN/scheduler" --config="$ETC/scheduler-config.yaml" --bind-address=127.0.0.1 \
    --secure-port="$PORT" -v=3
  alive controller 2
  wait_until 60 curl -sk -o /dev/null "https://127.0.0.1:$PORT/healthz" || { alive scheduler 1; die "the scheduler does not answer on 127.0.0.1:$PORT"; }
  wait_until 30 curl -sf -o /dev/null "http://127.0.0.1:$PROBE_PORT/healthz" || { alive controller 1; die "the controller's probe does not answer on 127.0.0.1:$PROBE_PORT"; }
  say "up: pods with schedulerName $NAME and the label scheduling.x-k8s.io/pod-group are gang-scheduled"
}

cmd_down() { stop scheduler; stop controller; }

cmd_status() {
  echo "coscheduling ($GANG_DIR/coscheduling), profile $NAME:"
  status_procs scheduler controller
}

case ${1:-} in
  build) shift; cmd_build "$@" ;;
  up) cmd_up ;;
  down) cmd_down ;;
  status) cmd_status ;;
  *) sed -n '8,16s/^# \{0,1\}//p' "$0"; exit 2 ;;
esac
