# Node loss on a real cluster (issue "A lost node costs seconds"): sourced by run.sh after lib.sh.
# Each case places some of the quickstart job's pods on the node to lose, loses that node (frozen,
# killed or drained) and never brings it back before the job ends; then it checks that training
# went on in round 0 (no checkpoint read), that the job Succeeded with one checksum on every rank,
# and prints the stall (the longest time training stood still after the fault) as a row for
# bench/RESULTS.md.
#
# They run only when the environment names the node and how to lose it (skipped, with the
# reason, otherwise); each command gets the node's name as its first argument:
#   DDP_E2E_LOSE_NODE    the node to lose (not the operator's: pin it elsewhere, e.g. the chart's
#                        nodeSelector), e.g. kit-1
#   DDP_E2E_NODE_STOP    kills the node (every process, network cut), e.g. 'kit.sh node-stop'
#   DDP_E2E_NODE_FREEZE  freezes it (processes stopped, network up); default: NODE_STOP with
#                        --freeze after the node's name (the kit's syntax)
#   DDP_E2E_NODE_START   brings it back (run after each case), e.g. 'kit.sh node-start'
#   DDP_E2E_NODE_BUDGET  the stall each case must stay under, seconds (default 30: the liveness
#                        timeout 10 s, a replacement's start and the rejoin window)
# Cases (E2E_ONLY names): node-worker-freeze, node-store-worker-freeze, node-store-worker-kill,
# node-store-freeze, node-drain.

LOSE=${DDP_E2E_LOSE_NODE:-}
NODE_BUDGET=${DDP_E2E_NODE_BUDGET:-30}
declare -A NODE_STALLS  # case -> its stall (seconds, or none), for node_return.sh

node_cmd() {  # node_cmd CMD [EXTRA]: runs CMD with the lost node's name (then EXTRA)
  bash -c "$1 \"\$1\" ${2:-}" node-cmd "$LOSE"
}

# Why the node-loss cases cannot run here ("" when they can).
node_loss_unavailable() {
  [ -n "$LOSE" ] || { echo "DDP_E2E_LOSE_NODE names no node to lose"; return; }
  [ -n "${DDP_E2E_NODE_STOP:-}" ] || { echo "DDP_E2E_NODE_STOP gives no command to lose $LOSE"; return; }
  [ -n "${DDP_E2E_NODE_START:-}" ] || { echo "DDP_E2E_NODE_START gives no command to restore $LOSE"; return; }
  kubectl get node "$LOSE" >/dev/null 2>&1 || { echo "no node $LOSE in the cluster"; return; }
  local ready
  ready=$(kubectl get nodes --no-headers 2>/dev/null | awk '$2 == "Ready"' | wc -l)
  [ "$ready" -ge 2 ] || { echo "fewer than two Ready nodes ($ready)"; return; }
  local op
  op=$(kubectl -n ddp-system get pods -l app.kubernetes.io/name=ddp-operator -o jsonpath='{.items[*].spec.nodeName}' 2>/dev/null)
  [[ " $op " != *" $LOSE "* ]] || { echo "the operator runs on $LOSE: pin it to another node"; return; }
}

others() { kubectl get nodes -o jsonpath='{.items[*].metadata.name}' | tr ' ' '\n' | grep -vx "$LOSE"; }

# step_off_node NAME: the highest step on the job's Running pods that are not on the lost node.
step_off_node() {
  local pod best=0 v
  for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" --field-selector="status.phase=Running,spec.nodeName!=$LOSE" \
                 -o jsonpath='{.items[*].metadata.name}' 2>/dev/null); do
    v=$(kubectl get --raw "/api/v1/namespaces/$NS/pods/$pod:9400/proxy/metrics" --request-timeout=3s 2>/dev/null \
          | awk '/^ddp_worker_steps_total[{ ]/ {if ($NF > m) m = $NF} END {print m + 0}')
    [ "${v%.*}" -gt "$best" ] 2>/dev/null && best=${v%.*}
  done
  echo "$best"
}

# wait_for SECONDS CMD...: polls CMD once a second until it succeeds; false after SECONDS.
wait_for() {
  local until=$(( $(date +%s) + $1 )); shift
  until "$@"; do [ "$(date +%s)" -lt "$until" ] || return 1; sleep 1; done
}

within_budget() { [ "$1" != none ] && [ "$1" -le "$NODE_BUDGET" ]; }

# place NAME POD...: the job's listed pods onto the lost node, the others stay where they are
# (the job was created with the lost node cordoned): the other nodes cordoned, the listed pods
# deleted and replaced on the lost node, the other nodes uncordoned.
place() {
  local name=$1 pod n; shift
  for n in $(others); do kubectl cordon "$n" >/dev/null; done
  kubectl uncordon "$LOSE" >/dev/null
  for pod in "$@"; do kubectl -n "$NS" delete pod "$name-$pod" --wait=false >/dev/null; done
  local ok=0
  wait_for 240 bash -c "for p in $*; do [ \"\$(kubectl -n $NS get pod $name-\$p -o jsonpath='{.spec.nodeName}/{.status.phase}/{.metadata.deletionTimestamp}' 2>/dev/null)\" = $LOSE/Running/ ] || exit 1; done" && ok=1
  for n in $(others); do kubectl uncordon "$n" >/dev/null; done
  [ "$ok" = 1 ]
}

restore_node() {
  node_cmd "$DDP_E2E_NODE_START" >/dev/null 2>&1
  kubectl uncordon "$LOSE" >/dev/null 2>&1
  wait_for 180 bash -c "kubectl get node $LOSE --no-headers | awk '\$2 == \"Ready\"' | grep -q ." \
    || say "node $LOSE is not Ready 180 s after $DDP_E2E_NODE_START"
}

# scenario_node_loss CASE FAULT POD...: FAULT is freeze, kill or drain; PODs go on the lost node.
scenario_node_loss() {
  local case=$1 fault=$2; shift 2
  local why; why=$(node_loss_unavailable)
  if [ -n "$why" ]; then say "skip $case: $why"; timing "$case: skipped ($why)"; return 0; fi
  local name=$case t0 s0 stall=none sum rounds reads p
  kubectl cordon "$LOSE" >/dev/null
  say "job $name: recovery InPlace; $* on $LOSE, then $LOSE: $fault"
  manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null || fail_hard "kubectl apply of job $name failed"
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]" \
    || { check "$case: Running on the other node(s)" false; restore_node; return 0; }
  wait_for 240 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -ge $((STEPS / 10)) ]" 2>/dev/null
  check "$case: $* placed on $LOSE" place "$name" "$@"
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]"
  s0=$(step_off_node "$name")
  wait_for 120 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics --request-timeout=3s 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -gt $((s0 + 20)) ] 2>/dev/null"
  # The fault.
  case $fault in
    freeze) if [ -n "${DDP_E2E_NODE_FREEZE:-}" ]; then node_cmd "$DDP_E2E_NODE_FREEZE"; else node_cmd "$DDP_E2E_NODE_STOP" --freeze; fi ;;
    kill) node_cmd "$DDP_E2E_NODE_STOP" ;;
    drain) kubectl drain "$LOSE" --ignore-daemonsets --delete-emptydir-data --force --timeout=180s >/dev/null 2>&1 & ;;
  esac
  t0=$(date +%s)
  s0=$(step_off_node "$name")
  say "$case: $LOSE $fault at step $s0"
  # The stall: the longest time the step on the pods off the lost node stood still, from the
  # fault until they trained 400 steps past it (a drain's departure comes after the stop window,
  # once the pods trained on for seconds: the first step past s0 would miss it). Polled about
  # once a second: a normal interval between two advances seen is 1-2 s of it.
  local last=$s0 t_last=$t0 longest=0 cur now
  while [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    p=$(phase "$name")
    [ "$p" = Succeeded ] || [ "$p" = Failed ] && break
    cur=$(step_off_node "$name"); now=$(date +%s)
    if [ "$cur" -gt "$last" ]; then
      [ $((now - t_last)) -gt "$longest" ] && longest=$((now - t_last))
      last=$cur t_last=$now
      [ "$cur" -gt $((s0 + 400)) ] && break
    fi
    sleep 1
  done
  [ "$last" -gt "$s0" ] && stall=$longest
  NODE_STALLS[$case]=$stall  # node_return.sh compares the same loss with a return to it
  # The end, with the node still lost.
  while p=$(phase "$name"); [ "$p" != Succeeded ] && [ "$p" != Failed ] && [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    sleep 2
  done
  rounds=$(jget "$name" '{.status.round}')
  sum=$(job_checksum "$name")
  reads=$(for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" --field-selector="spec.nodeName!=$LOSE" -o jsonpath='{.items[*].metadata.name}'); do
            kubectl -n "$NS" logs "$pod" --request-timeout=5s 2>/dev/null | grep -c 'resumed from checkpoint'; done | awk '{s += $1} END {print s + 0}')
  check "$case: Succeeded without $LOSE coming back ($p)" [ "$p" = Succeeded ]
  check "$case: training went on within ${NODE_BUDGET} s (stall ${stall} s)" within_budget "$stall"
  check "$case: in round 0 (round ${rounds:-?})" [ "$rounds" = 0 ]
  check "$case: no checkpoint read ($reads)" [ "$reads" = 0 ]
  check "$case: every rank ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  [ -z "$REF" ] || check "$case: the checksum of the undisturbed run ($REF)" [ "$sum" = "$REF" ]
  local equal=no; [ -n "$sum" ] && { [ -z "$REF" ] || [ "$sum" = "$REF" ]; } && equal=yes
  timing "RESULTS | $case | $* on $LOSE, $fault | stall ${stall} s | round ${rounds:-?} | checkpoint reads $reads | checksums equal: $equal${REF:+ (reference)} | $p |"
  while read -r line; do [ -z "$line" ] || timing "$case heal stall: $line"; done < <(stalls "$name")
  kubectl -n "$NS" get events --field-selector "involvedObject.name=$name" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null \
    | grep -E 'RendezvousSilent|NodeSuspect|PodOffLostNode|PodReplaced|ForceDeletingPod' | sed "s/^/[$case] /"
  restore_node
}
