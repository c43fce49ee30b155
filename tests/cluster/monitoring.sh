# The monitoring scenario of tests/cluster/run.sh (sourced): a real Prometheus (Debian's
# `prometheus`, scripts/install-deps.sh) scrapes the cluster while a job heals a scripted trainer
# kill in place; then every panel query of the chart's dashboard must return data over the run,
# the heal must show in ddp_job_recovery_seconds, and status.incidents must name the killed rank,
# its pod and node, with a stall within 10% of the one the surviving trainer logged.
# Debian's prometheus is built without Kubernetes service discovery: a loop here writes its
# file_sd targets from the API every 2 s, with the targets and labels examples/prometheus/
# prometheus.yaml's kubernetes_sd relabelling gives (tests/cluster/prom_util.py targets).
# Uses ROOT, NS, STEPS and the functions of lib.sh.

PROM_PID="" PROM_SD_PID="" PROM_DIR="" PROM=""
# prom_config DIR: DIR/prometheus.yml, scraping the file_sd targets in DIR/targets.json (paths as
# seen from the host: a Prometheus pod mounts DIR at the same path).
prom_config() {
  cat > "$1/prometheus.yml" <<YAML
global: {scrape_interval: 2s, evaluation_interval: 2s}
scrape_configs:
  - job_name: ddp
    file_sd_configs: [{files: ["$1/targets.json"], refresh_interval: 2s}]
    # examples/prometheus/prometheus.yaml's and the PodMonitor's rule: rank 0's series on the
    # rendezvous pod's page are kept from rank 0's pod alone.
    metric_relabel_configs:
      - source_labels: [pod, __name__]
        regex: .+-rendezvous;ddp_worker_.+
        action: drop
YAML
}
# prom_targets_start DIR: the loop that writes DIR/targets.json from the API every 2 s.
prom_targets_start() {
  local dir=$1
  ( while :; do
      kubectl get pods -A -l app.kubernetes.io/name=ddp-operator -o json > "$dir/op.json" 2>/dev/null
      kubectl get pods -A -l ddp.dev/job-name -o json > "$dir/pods.json" 2>/dev/null
      python3 "$ROOT/tests/cluster/prom_util.py" targets "$dir/op.json" "$dir/pods.json" "$dir/targets.json" 2>/dev/null
      sleep 2
    done ) &
  PROM_SD_PID=$!
}
# prom_wait_ready URL SECONDS: polls URL/-/ready.
prom_wait_ready() {
  local t
  for ((t = 0; t < $2; t++)); do
    curl -sf "$1/-/ready" >/dev/null 2>&1 && return 0
    sleep 1
  done
  return 1
}
prom_start() {
  command -v prometheus >/dev/null 2>&1 || { say "no prometheus binary (scripts/install-deps.sh installs Debian's)"; return 1; }
  PROM_DIR=$(mktemp -d)
  local port=${E2E_PROM_PORT:-19090}
  prom_config "$PROM_DIR"
  prom_targets_start "$PROM_DIR"
  prometheus --config.file="$PROM_DIR/prometheus.yml" --storage.tsdb.path="$PROM_DIR/data" \
    --web.listen-address="127.0.0.1:$port" > "$PROM_DIR/prometheus.log" 2>&1 &
  PROM_PID=$!
  PROM="http://127.0.0.1:$port"
  prom_wait_ready "$PROM" 60 && return 0
  say "prometheus did not become ready: $(tail -n 5 "$PROM_DIR/prometheus.log")"
  return 1
}
prom_stop() {
  [ -z "$PROM_SD_PID" ] || { kill "$PROM_SD_PID" 2>/dev/null; wait "$PROM_SD_PID" 2>/dev/null; }
  [ -z "$PROM_PID" ] || { kill "$PROM_PID" 2>/dev/null; wait "$PROM_PID" 2>/dev/null; }
  [ -z "$PROM_DIR" ] || rm -rf "$PROM_DIR"
  PROM_PID="" PROM_SD_PID="" PROM_DIR=""
}

MON_HEALED="" MON_NODE=""
monitoring_hook() {
  [ -n "$MON_NODE" ] || MON_NODE=$(kubectl -n "$NS" get pod "$1-worker-1" -o jsonpath='{.spec.nodeName}' 2>/dev/null)
  # The first time status.incidents has a closed incident, remember when.
  [ -n "$MON_HEALED" ] || [ -z "$(jget "$1" '{.status.incidents[0].stallSeconds}')" ] || MON_HEALED=$(date +%s)
}

# monitoring_checks WHAT NAME START END: what a Prometheus at PROM stored of job NAME, run
# between START and END (epoch seconds) with monitoring_hook and a scripted kill of rank 1 healed
# in place: the incident in the status against the trainer's log, the heal in
# ddp_job_recovery_seconds, goodput, no rank-0 series from the rendezvous pod, every panel.
# Each check is named "WHAT: ...".
monitoring_checks() {
  local what=$1 name=$2 start=$3 end=$4 inc kind pod node rank stall outcome logged count goodput dup
  check "$what: Succeeded" [ "$(phase "$name")" = Succeeded ]
  # The incident as the status has it, against the pod and the trainer's own log.
  inc=$(kubectl -n "$NS" get ddpj "$name" -o jsonpath='{.status.incidents[0].kind} {.status.incidents[0].pod} {.status.incidents[0].node} {.status.incidents[0].rank} {.status.incidents[0].stallSeconds} {.status.incidents[0].outcome}')
  say "incident: $inc"
  read -r kind pod node rank stall outcome <<<"$inc"
  check "$what: the scripted kill is a TrainerExit of rank 1 in $name-worker-1, HealedInPlace ($inc)" \
    [ "$kind $pod $rank $outcome" = "TrainerExit $name-worker-1 1 HealedInPlace" ]
  # The pods are gone once the job finished (cleanPodPolicy): the node worker-1 ran on, as seen.
  check "$what: the incident names worker-1's node ($node; worker-1 ran on ${MON_NODE:-?})" \
    bash -c '[ -n "$1" ] && [ "$1" = "$2" ]' _ "$node" "$MON_NODE"
  logged=$(kubectl -n "$NS" logs "$name-worker-0" 2>/dev/null | grep -Eo 'rank 0: training stood still [0-9.]+s' | head -n 1 | grep -Eo '[0-9.]+s$' | tr -d s)
  check "$what: the stall ($stall s) within 10% of the one rank 0 logged (${logged:-none} s)" \
    python3 -c "import sys; a, b = float('$stall'), float('${logged:-nan}'); sys.exit(0 if abs(a - b) <= 0.1 * b else 1)"
  timing "$what: heal stall $stall s (status), ${logged:-?} s (rank 0's log)"
  count=$(python3 "$ROOT/tests/cluster/prom_util.py" value "$PROM" \
            "sum(ddp_job_recovery_seconds_count{ddp_job=\"$name\",kind=\"TrainerExit\",outcome=\"HealedInPlace\"})")
  check "$what: the heal in ddp_job_recovery_seconds (count ${count:-none})" \
    bash -c '[ -n "$1" ] && [ "$1" != 0 ]' _ "$count"
  goodput=$(python3 "$ROOT/tests/cluster/prom_util.py" value "$PROM" "max(ddp_job_goodput_ratio{ddp_job=\"$name\"})")
  check "$what: ddp_job_goodput_ratio read (${goodput:-none})" [ -n "$goodput" ]
  # The rendezvous pod's page ends with rank 0's: none of those may be stored twice.
  dup=$(python3 "$ROOT/tests/cluster/prom_util.py" value "$PROM" \
          "max_over_time(count(ddp_worker_info{ddp_job=\"$name\",pod=~\".+-rendezvous\"})[$((end - start))s:2s])")
  check "$what: no ddp_worker_* series stored from the rendezvous pod (${dup:-none})" [ -z "$dup" ]
  # GPU memory: no series without a GPU (docs/metrics.md), which this cluster has not.
  check "$what: every dashboard panel returns data over the run" \
    python3 "$ROOT/tests/cluster/prom_util.py" panels "$ROOT/charts/ddp-operator/dashboards/ddp.json" \
      "$PROM" "$NS" "$name" "$start" "$end" "GPU memory"
}

scenario_monitoring() {
  local name=monitored start end
  prom_start || { check "monitoring: a Prometheus runs" false; prom_stop; return; }
  check "monitoring: a Prometheus runs" true
  start=$(date +%s)
  MON_HEALED="" MON_NODE=""
  run_job "$name" InPlace $((STEPS / 3)) monitoring_hook
  end=$(date +%s)
  sleep 6  # the operator's and the workers' last values reach two more scrapes
  monitoring_checks monitoring "$name" "$start" "$((end + 6))"
  prom_stop
}
