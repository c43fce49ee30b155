# The monitoring-policy scenario of tests/cluster/run.sh (sourced; issue 52): Prometheus in a
# namespace of its own scrapes the cluster while every NetworkPolicy is enforced, as on a cluster
# whose CNI enforces them. The kit's bridge CNI enforces none: tests/cluster/netpol.py stands in
# (ingress rules only, as iptables rules in the host and every kit-* network namespace, where the
# kit forwards pod traffic; docs/metrics.md says what it covers). Steps:
#   1. the chart reinstalled with networkPolicy.prometheusNamespace = that namespace (the operator
#      reads --metrics-namespace at start); a job created before has its NetworkPolicy patched
#      to admit it (the operator brings running jobs' policies to its settings), then goes;
#   2. netpol.py run in the background; it is stopped and its rules removed at the scenario's end,
#      or by run.sh's EXIT trap;
#   3. Prometheus as a pod of that namespace: Debian's prometheus (it links only libc) mounted by
#      hostPath into a ddp-operator:0.1.0 pod (the nodes hold only the project's images and
#      pause), its config and file_sd targets in a hostPath directory written by monitoring.sh's
#      target loop;
#   4. a job with monitoring.sh's scripted heal; while it trains, enforcement is shown real first
#      (a probe pod in another namespace cannot reach a worker's or the operator's metrics port,
#      while one in Prometheus' namespace can, and the first reaches an unprotected pod), then
#      every scrape target is up and "ranks reporting" equals the ranks;
#   5. monitoring.sh's checks of what Prometheus stored (every panel has data, no rank-0 series
#      from the rendezvous pod), and "ranks reporting" never above the ranks;
#   6. the enforcer stopped with no rule left; the chart reinstalled without the value.
# Skipped with the reason when not root, without iptables, ip or Debian's prometheus, or when a
# node is not one of the kit's (kit-0 on the host, kit-N in /run/netns/kit-N): the rules would not
# lie on the pods' path.
# Environment: E2E_PROM_NODE (the node of the Prometheus pod; default kit-0, the host, where its
# hostPath directory is), E2E_PROBE_IMAGE (ddp-operator:0.1.0).
# Uses ROOT, NS, STEPS, the functions of lib.sh and monitoring.sh.

# shellcheck disable=SC2034  # EXTRA_SED is read by manifest (lib.sh)
MP_NETPOL_PID="" MP_PROM_NS="" MP_OTHER_NS="" MP_IMAGE=${E2E_PROBE_IMAGE:-ddp-operator:0.1.0}

# mp_unavailable: why the scenario cannot run here (empty: it can).
mp_unavailable() {
  local node netns
  [ "$(id -u)" = 0 ] || { echo "not root: netpol.py writes iptables rules"; return; }
  command -v iptables-restore >/dev/null 2>&1 || { echo "no iptables-restore on PATH"; return; }
  command -v ip >/dev/null 2>&1 || { echo "no ip (iproute2) on PATH"; return; }
  command -v prometheus >/dev/null 2>&1 || { echo "no prometheus binary (scripts/install-deps.sh installs Debian's)"; return; }
  for node in $(kubectl get nodes -o jsonpath='{.items[*].metadata.name}'); do
    case $node in
      kit-0) netns="" ;;
      kit-[0-9]*) netns=$node
                  [ -e "/run/netns/$node" ] || { echo "node $node has no /run/netns/$node here"; return; } ;;
      *) echo "node $node is not the kit's: netpol.py enforces only on the kit (tests/cluster/netpol.py)"; return ;;
    esac
    # Per network namespace on newer kernels, else the host's value holds for all.
    [ "$(mp_in "$netns" cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null \
         || cat /proc/sys/net/bridge/bridge-nf-call-iptables 2>/dev/null)" = 1 ] \
      || { echo "net.bridge.bridge-nf-call-iptables is not 1 on $node: bridged pod traffic would bypass the rules"; return; }
  done
}

# mp_in NETNS CMD...: CMD in network namespace NETNS ("" for the host's).
mp_in() { local n=$1; shift; if [ -n "$n" ]; then ip netns exec "$n" "$@"; else "$@"; fi; }
mp_netns_all() { find /run/netns -maxdepth 1 -name 'kit-*' -printf '%f\n' 2>/dev/null | sort; }

# mp_hooked: the chain is hooked in FORWARD of the host and of every kit-* namespace.
mp_hooked() {
  local n
  for n in $(mp_netns_all) ""; do mp_in "$n" iptables -C FORWARD -j DDP-NETPOL 2>/dev/null || return 1; done
}
# mp_isolated IP...: every namespace's chain drops the rest of the traffic to each IP.
mp_isolated() {
  local n ip rules
  for n in $(mp_netns_all) ""; do
    rules=$(mp_in "$n" iptables -S DDP-NETPOL 2>/dev/null) || return 1
    for ip in "$@"; do grep -q -- "-d $ip/32 .*-j DROP" <<<"$rules" || return 1; done
  done
}
# mp_no_rules: no chain and no hook left anywhere.
mp_no_rules() {
  local n
  for n in $(mp_netns_all) ""; do
    ! mp_in "$n" iptables -S DDP-NETPOL >/dev/null 2>&1 || return 1
    ! mp_in "$n" iptables -C FORWARD -j DDP-NETPOL >/dev/null 2>&1 || return 1
  done
}

mp_stop_enforcer() {
  if [ -n "$MP_NETPOL_PID" ]; then
    kill "$MP_NETPOL_PID" 2>/dev/null  # SIGTERM: it removes its rules and exits
    wait_gone_or 15 bash -c "! kill -0 $MP_NETPOL_PID 2>/dev/null"
    wait "$MP_NETPOL_PID" 2>/dev/null
    MP_NETPOL_PID=""
  fi
  python3 "$ROOT/tests/cluster/netpol.py" stop >/dev/null 2>&1  # whatever a kill left
}

# mp_probe_pod: a pod that sleeps, to open connections from with kubectl exec.
mp_probe_pod() {
  kubectl -n "$1" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: probe, labels: {app: probe}}
spec:
  terminationGracePeriodSeconds: 0
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true}
  containers: [{name: probe, image: $MP_IMAGE, command: [sleep, "3600"], resources: {requests: {cpu: 10m, memory: 16Mi}}}]
EOF
}
# mp_reach NS IP PORT: whether pod probe of NS opens a TCP connection to IP:PORT within 3 s.
mp_reach() { kubectl -n "$1" exec probe -- timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" >/dev/null 2>&1; }
# mp_dropped NS IP PORT: the connection gets no answer within 3 s (timeout's 124): dropped, not
# refused for want of a listener, which would prove nothing.
mp_dropped() {
  kubectl -n "$1" exec probe -- timeout 3 bash -c "exec 3<>/dev/tcp/$2/$3" >/dev/null 2>&1
  [ $? = 124 ]
}

# mp_prometheus_pod DIR NODE: Debian's prometheus by hostPath in the operator's image, its files
# in hostPath DIR (mounted at the same path, so monitoring.sh's config works unchanged).
mp_prometheus_pod() {
  local dir=$1 node=$2 bin
  bin=$(readlink -f "$(command -v prometheus)")
  kubectl -n "$MP_PROM_NS" apply -f - >/dev/null <<EOF
apiVersion: v1
kind: Pod
metadata: {name: prometheus, labels: {app: prometheus}}
spec:
  ${node:+nodeSelector: {kubernetes.io/hostname: $node}}
  terminationGracePeriodSeconds: 2
  securityContext: {runAsUser: 65532, runAsGroup: 65532, runAsNonRoot: true}
  containers:
    - name: prometheus
      image: $MP_IMAGE
      command: [/usr/local/bin/prometheus, --config.file=$dir/prometheus.yml,
                --storage.tsdb.path=$dir/data, --web.listen-address=0.0.0.0:9090]
      ports: [{name: web, containerPort: 9090}]
      resources: {requests: {cpu: 100m, memory: 128Mi}}
      volumeMounts:
        - {name: bin, mountPath: /usr/local/bin/prometheus, readOnly: true}
        - {name: files, mountPath: $dir}
  volumes:
    - {name: bin, hostPath: {path: $bin, type: File}}
    - {name: files, hostPath: {path: $dir, type: Directory}}
EOF
}

# mp_operator_port NAME: the operator container's port of that name.
mp_operator_port() {
  kubectl -n ddp-system get pods -l app.kubernetes.io/name=ddp-operator --field-selector=status.phase=Running \
    -o jsonpath="{.items[0].spec.containers[0].ports[?(@.name==\"$1\")].containerPort}" 2>/dev/null
}
# mp_policy_admits JOB: the job's NetworkPolicy admits Prometheus' namespace to its metrics port.
mp_policy_admits() {
  kubectl -n "$NS" get networkpolicy "$1" \
    -o jsonpath='{.spec.ingress[*].from[*].namespaceSelector.matchLabels.kubernetes\.io/metadata\.name}' 2>/dev/null \
    | tr ' ' '\n' | grep -qx "$MP_PROM_NS"
}
# mp_events JOB REASON: the messages of the job's events with that reason ("none" when none).
mp_events() {
  local m
  m=$(kubectl -n "$NS" get events --field-selector "involvedObject.kind=DDPJob,involvedObject.name=$1,reason=$2" \
        -o jsonpath='{.items[*].message}' 2>/dev/null)
  echo "${m:-none}"
}
pod_ip() { kubectl -n "$1" get pod "$2" -o jsonpath='{.status.podIP}' 2>/dev/null; }

# The hook of the job: monitoring.sh's, then once the job's pods run and are isolated, the proof
# of enforcement, then (until it holds or 120 s passed) every target up and the ranks reporting.
MP_STATE=0 MP_SINCE=0 MP_UP="" MP_RANKS=""
mp_hook() {
  local name=$1 w0 w1 rdzv op prom op_metrics op_health
  monitoring_hook "$@"
  case $MP_STATE in
    0)
      [ "$(phase "$name")" = Running ] || return 0
      w0=$(pod_ip "$NS" "$name-worker-0") w1=$(pod_ip "$NS" "$name-worker-1") rdzv=$(pod_ip "$NS" "$name-rendezvous")
      op=$(kubectl -n ddp-system get pods -l app.kubernetes.io/name=ddp-operator --field-selector=status.phase=Running \
             -o jsonpath='{.items[0].status.podIP}' 2>/dev/null)
      prom=$(pod_ip "$MP_PROM_NS" prometheus)
      [ -n "$w0" ] && [ -n "$w1" ] && [ -n "$rdzv" ] && [ -n "$op" ] || return 0
      # The operator's named ports, as the chart's policy names them (values metrics.port, health.port).
      op_metrics=$(mp_operator_port metrics) op_health=$(mp_operator_port health)
      wait_gone_or 30 mp_isolated "$w0" "$w1" "$rdzv" "$op"
      check "monitoring-policy: netpol.py isolates the job's pods and the operator on every node" mp_isolated "$w0" "$w1" "$rdzv" "$op"
      say "proving enforcement: worker-0 $w0, worker-1 $w1 (on ${MON_NODE:-?}), rendezvous $rdzv, operator $op; from $MP_OTHER_NS and $MP_PROM_NS"
      check "monitoring-policy: a pod of another namespace reaches an unprotected pod (Prometheus $prom:9090)" \
        mp_reach "$MP_OTHER_NS" "$prom" 9090
      check "monitoring-policy: a pod of another namespace cannot reach worker-0's metrics port ($w0:9400): dropped" \
        mp_dropped "$MP_OTHER_NS" "$w0" 9400
      check "monitoring-policy: nor worker-1's ($w1:9400; on worker-1's node when there are two)" \
        mp_dropped "$MP_OTHER_NS" "$w1" 9400
      check "monitoring-policy: nor the operator's ($op:$op_metrics, the chart's policy, named port metrics)" \
        mp_dropped "$MP_OTHER_NS" "$op" "$op_metrics"
      check "monitoring-policy: it reaches the operator's health port $op_health (no from: any source)" \
        mp_reach "$MP_OTHER_NS" "$op" "$op_health"
      check "monitoring-policy: a pod of Prometheus' namespace reaches worker-0's metrics port" mp_reach "$MP_PROM_NS" "$w0" 9400
      check "monitoring-policy: ... worker-1's" mp_reach "$MP_PROM_NS" "$w1" 9400
      check "monitoring-policy: ... the rendezvous pod's" mp_reach "$MP_PROM_NS" "$rdzv" 9400
      check "monitoring-policy: ... the operator's" mp_reach "$MP_PROM_NS" "$op" "$op_metrics"
      check "monitoring-policy: but not the rendezvous pod's other ports (29500): dropped" \
        mp_dropped "$MP_PROM_NS" "$rdzv" 29500
      MP_STATE=1 MP_SINCE=$(date +%s)
      ;;
    1)
      local up ranks
      up=$(python3 "$ROOT/tests/cluster/prom_util.py" up "$PROM" "$PROM_DIR/targets.json" 2>&1)
      ranks=$(python3 "$ROOT/tests/cluster/prom_util.py" panel-value "$ROOT/charts/ddp-operator/dashboards/ddp.json" \
                   "$PROM" "$NS" "$name" "Ranks reporting" 2>&1 | xargs)
      # Said when it changes: what was seen while the job trained, not only the last read.
      [ "$up|$ranks" = "$MP_UP|$MP_RANKS" ] || say "monitoring-policy: $up; ranks reporting ${ranks:-none}"
      MP_UP=$up MP_RANKS=$ranks
      if [[ $MP_UP =~ ^([0-9]+)\ of\ ([0-9]+)\ targets\ up$ ]] && [ "${BASH_REMATCH[2]}" -ge 4 ] && [ "$MP_RANKS" = 2 ]; then
        MP_STATE=2
      elif [ $(($(date +%s) - MP_SINCE)) -ge 120 ]; then
        MP_STATE=3
      fi
      ;;
  esac
}

scenario_monitoring_policy() {
  local name=policed why dir node start end max_ranks
  why=$(mp_unavailable)
  if [ -n "$why" ]; then scenario_skip "monitoring-policy: $why"; return 0; fi
  MP_PROM_NS=ddp-e2e-prom-$$ MP_OTHER_NS=ddp-e2e-other-$$
  if ! kubectl create namespace "$MP_PROM_NS" >/dev/null || ! kubectl create namespace "$MP_OTHER_NS" >/dev/null; then
    check "monitoring-policy: namespaces $MP_PROM_NS and $MP_OTHER_NS created" false
    return
  fi
  [ "${E2E_KEEP:-0}" = 1 ] || exit_cleanup_add "kubectl delete namespace $MP_PROM_NS $MP_OTHER_NS --wait=false >/dev/null 2>&1"
  # 1. The operator admits Prometheus' namespace (--metrics-namespace) to every job's metrics port,
  #    a job already running included (its policy, written before, is patched).
  EXTRA_SED=(-e 's/^  replicas: 2$/  replicas: 1/')
  manifest "$name-before" Restart none | kubectl -n "$NS" apply -f - >/dev/null
  EXTRA_SED=()
  wait_gone_or 60 kubectl -n "$NS" get networkpolicy "$name-before" >/dev/null 2>&1
  check "monitoring-policy: the chart reinstalled with networkPolicy.prometheusNamespace=$MP_PROM_NS" \
    chart_reinstall --set "networkPolicy.prometheusNamespace=$MP_PROM_NS"
  wait_gone_or 60 mp_policy_admits "$name-before"
  check "monitoring-policy: the policy of job $name-before, running since before, now admits $MP_PROM_NS (patched: $(mp_events "$name-before" UpdatingNetworkPolicy))" \
    mp_policy_admits "$name-before"
  kubectl -n "$NS" delete ddpj "$name-before" --wait=true --timeout=120s >/dev/null 2>&1
  wait_gone_or 120 bash -c "[ -z \"\$(kubectl -n $NS get pods -l ddp.dev/job-name=$name-before -o name)\" ]"
  # 2. The enforcer.
  dir=$(mktemp -d) && chmod 0777 "$dir"  # the pod runs as 65532 and writes its data here
  PROM_DIR=$dir
  python3 "$ROOT/tests/cluster/netpol.py" run > "$dir/netpol.log" 2>&1 &
  MP_NETPOL_PID=$!
  exit_cleanup_add mp_stop_enforcer
  wait_gone_or 30 mp_hooked
  check "monitoring-policy: netpol.py hooked into FORWARD of the host and $(mp_netns_all | xargs | sed 's/^$/no namespace/')" mp_hooked
  # 3. Prometheus, a pod of its namespace; probe pods there and in another namespace.
  prom_config "$dir"
  prom_targets_start "$dir"
  node=${E2E_PROM_NODE-kit-0}
  kubectl get node "$node" >/dev/null 2>&1 || node=""
  mp_prometheus_pod "$dir" "$node"
  mp_probe_pod "$MP_PROM_NS"
  mp_probe_pod "$MP_OTHER_NS"
  kubectl -n "$MP_PROM_NS" wait --for=condition=Ready pod/prometheus pod/probe --timeout=180s >/dev/null 2>&1
  kubectl -n "$MP_OTHER_NS" wait --for=condition=Ready pod/probe --timeout=120s >/dev/null 2>&1
  PROM="http://$(pod_ip "$MP_PROM_NS" prometheus):9090"
  if ! prom_wait_ready "$PROM" 90; then
    check "monitoring-policy: Prometheus runs as a pod of $MP_PROM_NS ($PROM)" false
    kubectl -n "$MP_PROM_NS" logs prometheus 2>&1 | tail -n 5
    mp_cleanup "$dir"
    return
  fi
  check "monitoring-policy: Prometheus runs as a pod of $MP_PROM_NS ($PROM)" true
  # 4. The job; the hook proves enforcement, then waits for every target up.
  start=$(date +%s)
  # shellcheck disable=SC2034  # MON_HEALED and MON_NODE: monitoring_hook's (monitoring.sh)
  MON_HEALED="" MON_NODE="" MP_STATE=0 MP_UP="" MP_RANKS=""
  run_job "$name" InPlace $((STEPS / 3)) mp_hook
  end=$(date +%s)
  sleep 6  # the last values reach two more scrapes
  check "monitoring-policy: the enforcement proof ran while the job trained" [ "$MP_STATE" -ge 1 ]
  check "monitoring-policy: every scrape target up, the operator, the workers and the rendezvous pod (${MP_UP:-never read})" \
    [ "$MP_STATE" = 2 ]
  check "monitoring-policy: \"Ranks reporting\" equals the job's 2 ranks while it trained (${MP_RANKS:-none})" [ "$MP_RANKS" = 2 ]
  # 5. What Prometheus stored over the run.
  monitoring_checks monitoring-policy "$name" "$start" "$((end + 6))"
  max_ranks=$(python3 "$ROOT/tests/cluster/prom_util.py" value "$PROM" \
                "max_over_time(count(ddp_worker_info{namespace=\"$NS\",ddp_job=\"$name\"})[$((end + 6 - start))s:2s])")
  check "monitoring-policy: ranks reporting never above 2 over the run (${max_ranks:-none})" [ "$max_ranks" = 2 ]
  check "monitoring-policy: netpol.py said it leaves egress alone" grep -q 'egress rules are not enforced' "$dir/netpol.log"
  # 6. Back as before.
  mp_cleanup "$dir"
}

# mp_cleanup DIR: the enforcer stopped (no rule left), the pods and namespaces deleted, the chart
# as run.sh installed it.
mp_cleanup() {
  mp_stop_enforcer
  exit_cleanup_done mp_stop_enforcer
  check "monitoring-policy: netpol.py stopped, no DDP-NETPOL chain or hook left" mp_no_rules
  say "netpol.py's log: $(grep -c . "$1/netpol.log") lines; the first: $(head -n 2 "$1/netpol.log" | xargs)"
  kubectl -n "$MP_PROM_NS" delete pod prometheus probe --wait=true --timeout=60s >/dev/null 2>&1
  if [ "${E2E_KEEP:-0}" != 1 ]; then
    kubectl delete namespace "$MP_PROM_NS" "$MP_OTHER_NS" --wait=false >/dev/null 2>&1
    exit_cleanup_done "kubectl delete namespace $MP_PROM_NS $MP_OTHER_NS --wait=false >/dev/null 2>&1"
  fi
  prom_stop  # the target loop and DIR
  chart_reinstall || say "reinstalling the chart without networkPolicy.prometheusNamespace failed"
}
