#!/usr/bin/env bash
# The end-to-end suite on a real cluster (make e2e-cluster): the cluster in KUBECONFIG (kind, the
# kit's node, any cluster with the project's images loaded). It installs the chart, runs the
# quickstart's job (examples/mingpt-kind.yaml, step counts shortened) and checks, through the API
# and pod logs, what docs/quickstart-kind.md promises:
#   schema      a template with a mistyped field (containerPort "9400", an env name 5) is refused
#               by the API server (the CRD's pod template schema), even with --validate=false
#   reference   recovery Restart, undisturbed: Succeeded, equal checksums, the reference checksum
#   inplace     the quickstart job: a scripted trainer kill heals in place; `kubectl delete pod`
#               worker-1, then worker-0, each replaced alone in round 0 and healed; progress and
#               ETA in `kubectl get`; events; a metrics scrape of a worker and of the operator;
#               Succeeded at the last step with the reference checksum on every rank
#   monitoring  a real Prometheus (Debian's) scrapes the cluster during a job with a scripted heal:
#               every panel query of the dashboard returns data, the heal is in
#               ddp_job_recovery_seconds and in status.incidents with the trainers' own stall
#               (tests/cluster/monitoring.sh)
#   monitoring-policy
#               the same with every NetworkPolicy enforced (tests/cluster/netpol.py, ingress
#               only: the kit's bridge enforces none) and Prometheus as a pod of a namespace of
#               its own, the chart installed with networkPolicy.prometheusNamespace for it (the
#               policy of a job running from before is patched to admit it): a pod of another
#               namespace is refused the metrics ports, Prometheus' is not; every target up,
#               every panel with data, "ranks reporting" = the ranks
#               (tests/cluster/monitoring_policy.sh; skipped, with the reason, without root,
#               iptables or the kit's nodes)
#   all-inplace every worker pod deleted at once mid-run, recovery InPlace: Succeeded at the last
#               step with the reference checksum (issue 31's false success)
#   all-restart the same under recovery Restart
#   spare       spares: 1, worker-0 deleted mid-run: the spare takes rank 0 in round 0, Succeeded
#               with the reference checksum
#   resize      spec.elastic 2..3, `kubectl scale ddpj --replicas=3` mid-run: training goes on at
#               world size 3 (the time it took is printed) and Succeeded, the 3 ranks agreeing
#   node-worker-freeze, node-store-worker-freeze, node-store-worker-kill, node-store-freeze,
#               node-drain: a whole node lost under the job (tests/cluster/node_loss.sh; they run
#               only when DDP_E2E_LOSE_NODE and the commands to lose and restore it are set)
#   node-return-freeze, node-return-partition: the store's and worker-1's node frozen or cut off,
#               replaced, and back while the job trains (tests/cluster/node_return.sh; the same
#               settings)
#   chaos       `ddp-operator chaos` injects kill-trainer, delete-pod, freeze-pod, drain-node and
#               kill-rendezvous in turn into one job; each incident in the status with its pod,
#               node, rank and a stall within 10% of rank 0's own (tests/cluster/chaos.sh; the
#               same settings, and the build tree's ddp-operator or DDP_OPERATOR_BIN)
#   shrink-node-freeze, shrink-node-kill: 3 pods with spec.elastic (minReplicas 2), no spare,
#               worker-1's node frozen or killed: the group goes on at 2 within the liveness
#               timeout and a heal, without waiting for the replacement, and grows back to 3
#               (tests/cluster/shrink.sh; the same settings)
#   reseed-spare, reseed-shrunk: the rendezvous pod deleted while a spare holds a rank, and while
#               the group runs shrunk (its replacement pod starting late) with a trainer killed
#               after: round 0, no pod Fenced or replaced, nothing charged for the store's loss,
#               the group back at full size (tests/cluster/reseed.sh)
#   reseed-worker: the rendezvous pod deleted, then worker-1 as soon as it has gone (its SIGTERM
#               finds no store): worker-1 departs alone, worker-0's trainer never stops, no
#               recovery charged, round 0 (tests/cluster/reseed.sh)
#   gang-volcano, gang-coscheduling
#               the operator installed with the gang scheduler, against the real one: a job of 3
#               held whole while a job of 2 runs, started whole once room is made, new rounds,
#               in-place replacements and a resize admitted (tests/cluster/gang.sh; each runs
#               only when its scheduler places a probe pod, else it is skipped with the reason)
#
# Exit 0: every check passed; 1: a check failed (each is listed); 77: skipped, with the reason
# (no cluster, no kubectl, no helm or helmlite, no images). Timings (pod start latency, each
# heal's stall) are printed at the end and appended to $E2E_REPORT when set.
#
# Environment: E2E_STEPS (1200), E2E_WORKER_CPU (the example's request), E2E_KEEP=1 (keep the
# namespace), E2E_SKIP_INSTALL=1 (the chart is installed already), E2E_ONLY="inplace ..." (a
# subset of the scenarios), E2E_TIMEOUT (seconds per job, 600), E2E_CHART_SET (chart values, one
# KEY=VALUE a line, given to every install as --set, e.g. the operator's nodeSelector).
set -uo pipefail
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
. "$ROOT/tests/cluster/lib.sh"
. "$ROOT/tests/cluster/scenarios.sh"
. "$ROOT/tests/cluster/node_loss.sh"
. "$ROOT/tests/cluster/node_return.sh"
. "$ROOT/tests/cluster/monitoring.sh"
. "$ROOT/tests/cluster/monitoring_policy.sh"
. "$ROOT/tests/cluster/chaos.sh"
. "$ROOT/tests/cluster/shrink.sh"
. "$ROOT/tests/cluster/reseed.sh"
. "$ROOT/tests/cluster/gang.sh"

STEPS=${E2E_STEPS:-1200}
JOB_TIMEOUT=${E2E_TIMEOUT:-600}
ONLY=${E2E_ONLY:-schema reference inplace monitoring monitoring-policy spare resize all-inplace all-restart node-worker-freeze node-store-worker-freeze node-store-worker-kill node-store-freeze node-drain node-return-freeze node-return-partition chaos shrink-node-freeze shrink-node-kill reseed-spare reseed-shrunk reseed-worker gang-volcano gang-coscheduling}
NS=ddp-e2e-$(date +%s)
CHART_SET=()
while IFS= read -r kv; do [ -z "$kv" ] || CHART_SET+=(--set "$kv"); done <<<"${E2E_CHART_SET:-}"

command -v kubectl >/dev/null 2>&1 || skip "no kubectl on PATH"
[ -n "${KUBECONFIG:-}" ] || [ -f "$HOME/.kube/config" ] || skip "no KUBECONFIG and no ~/.kube/config: no cluster to run on"
kubectl get --raw /readyz >/dev/null 2>&1 || skip "the cluster in ${KUBECONFIG:-~/.kube/config} does not answer (kubectl get --raw /readyz)"
suite_start=$(date +%s)

# ---- 1. the operator, from the chart
if [ "${E2E_SKIP_INSTALL:-0}" != 1 ]; then
  render=$(chart_renderer) || skip "$render"
  say "installing the chart with $render"
  kubectl create namespace ddp-system --dry-run=client -o yaml | kubectl apply -f - >/dev/null
  kubectl apply -f "$ROOT/charts/ddp-operator/crds/" >/dev/null || fail_hard "kubectl apply of the CRD failed"
  $render template ddp "$ROOT/charts/ddp-operator" -n ddp-system "${CHART_SET[@]}" | kubectl apply -n ddp-system -f - >/dev/null \
    || fail_hard "applying the chart's render failed"
  kubectl -n ddp-system rollout restart deployment/ddp-ddp-operator >/dev/null 2>&1
fi
kubectl -n ddp-system rollout status deployment/ddp-ddp-operator --timeout=180s >/dev/null \
  || fail_hard "the operator's Deployment is not ready after 180 s: kubectl -n ddp-system describe pods"
check "operator Deployment ready" true

kubectl create namespace "$NS" >/dev/null || fail_hard "cannot create namespace $NS"
trap exit_cleanups_run EXIT
# shellcheck disable=SC2016  # expanded when the trap runs
[ "${E2E_KEEP:-0}" = 1 ] || exit_cleanup_add 'kubectl delete namespace "$NS" "${GANG_NAMESPACES[@]}" --wait=false >/dev/null 2>&1'
kubectl -n "$NS" apply -f "$ROOT/examples/kind-checkpoints-pvc.yaml" >/dev/null
say "namespace $NS; jobs of $STEPS steps"

REF=""
for scenario in $ONLY; do
  case $scenario in
    reference)
      run_job ref Restart none
      REF=$(job_checksum ref)
      check "reference: Succeeded" [ "$(phase ref)" = Succeeded ]
      check "reference: every rank ended at step $STEPS with one checksum ($REF)" [ -n "$REF" ]
      ;;
    inplace) scenario_inplace ;;
    monitoring) scenario_monitoring ;;
    monitoring-policy) scenario_monitoring_policy ;;
    all-inplace) scenario_all_pods InPlace ;;
    all-restart) scenario_all_pods Restart ;;
    spare) scenario_spare ;;
    schema) scenario_schema ;;
    resize) scenario_resize ;;
    node-worker-freeze) scenario_node_loss "$scenario" freeze worker-1 ;;
    node-store-worker-freeze) scenario_node_loss "$scenario" freeze rendezvous worker-1 ;;
    node-store-worker-kill) scenario_node_loss "$scenario" kill rendezvous worker-1 ;;
    node-store-freeze) scenario_node_loss "$scenario" freeze rendezvous ;;
    node-drain) scenario_node_loss "$scenario" drain rendezvous worker-1 ;;
    node-return-freeze) scenario_node_return "$scenario" freeze ;;
    node-return-partition) scenario_node_return "$scenario" partition ;;
    chaos) scenario_chaos ;;
    shrink-node-freeze) scenario_shrink "$scenario" freeze ;;
    shrink-node-kill) scenario_shrink "$scenario" kill ;;
    reseed-spare) scenario_reseed_spare ;;
    reseed-shrunk) scenario_reseed_shrunk ;;
    reseed-worker) scenario_reseed_worker ;;
    gang-volcano) scenario_gang volcano ;;
    gang-coscheduling) scenario_gang coscheduling ;;
    *) fail_hard "unknown scenario $scenario" ;;
  esac
done

for s in "${STARTS[@]}"; do timing "pod start latency (created -> container started): ${s% *} ${s##* } s"; done
say "done in $(( $(date +%s) - suite_start )) s"
for s in "${SKIPS[@]}"; do timing "SKIPPED: $s"; done
[ "$PASSED" -gt 1 ] || [ ${#FAILED[@]} -gt 0 ] || [ ${#SKIPS[@]} -eq 0 ] || skip "${SKIPS[*]}"
report
