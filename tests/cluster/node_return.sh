# A lost node that comes back (issue "Recovery that holds where it runs", item 2): sourced by
# run.sh after node_loss.sh, whose functions and settings it uses. The rendezvous pod and worker-1
# go on the lost node; the node is frozen (its processes stopped, its network up) or partitioned
# (its link cut both ways, its processes running on unseen: a switch failure, the likelier way
# for old processes to come back); the group replaces them on other nodes and trains on; then,
# RETURN_AFTER seconds after the fault and once the replacements train, the node comes back with
# the old processes in it, while the job trains. What must hold: the returning processes displace
# nobody. The job Succeeds in round 0 with recoveries and restarts 0 (the loss is one disruption,
# never a charge), every rank on one checksum (the undisturbed run's when it ran), and training
# stands still no longer than without the return: after the return, readings never show one
# step for more than 2 s (the polling period left out); before it, the loss within the node
# budget (printed beside node-store-worker-freeze's, the same loss without a return, when it ran
# in this suite).
#
# Environment, beyond node_loss.sh's: DDP_E2E_NODE_PARTITION, the command that partitions the
# node (default: DDP_E2E_NODE_STOP with --partition after the node's name, the kit's syntax);
# DDP_E2E_RETURN_AFTER, seconds from the fault to the return (default 25).
# Cases (E2E_ONLY names): node-return-freeze, node-return-partition.

RETURN_AFTER=${DDP_E2E_RETURN_AFTER:-25}

# The longest time the step on the pods off the lost node stood still between two advances
# seen, while polling until `until` (epoch seconds) or the job's end; prints
# "LONGEST LAST_STEP STILL", starting from step $2 at time $3. LONGEST includes the polling
# period (a reading takes two API calls and a second's sleep: 3 s and more on a loaded machine);
# STILL does not: the longest span over which readings kept showing one step, 0 when every
# reading saw training advance.
watch_stall() {
  local name=$1 last=$2 t_last=$3 until=$4 longest=0 still=0 prev=$3 cur now p
  while [ "$(date +%s)" -lt "$until" ]; do
    p=$(phase "$name")
    { [ "$p" = Succeeded ] || [ "$p" = Failed ]; } && break
    cur=$(step_off_node "$name"); now=$(date +%s)
    if [ "$cur" -gt "$last" ]; then
      [ $((now - t_last)) -gt "$longest" ] && longest=$((now - t_last))
      [ $((prev - t_last)) -gt "$still" ] && still=$((prev - t_last))
      last=$cur t_last=$now
    fi
    prev=$now
    sleep 1
  done
  now=$(date +%s)
  # Still standing when the watch ended (and the job did not): that counts too.
  p=$(phase "$name")
  if [ "$p" != Succeeded ]; then
    [ $((now - t_last)) -gt "$longest" ] && longest=$((now - t_last))
    [ $((now - t_last)) -gt "$still" ] && still=$((now - t_last))
  fi
  echo "$longest $last $still"
}

# scenario_node_return CASE FAULT: FAULT is freeze or partition.
scenario_node_return() {
  local case=$1 fault=$2
  local why; why=$(node_loss_unavailable)
  if [ -n "$why" ]; then say "skip $case: $why"; timing "$case: skipped ($why)"; return 0; fi
  local name=$case t0 s0 p sum rounds restarts recoveries back before=0 after=0 last
  kubectl cordon "$LOSE" >/dev/null
  say "job $name: recovery InPlace; rendezvous and worker-1 on $LOSE, $fault, back after ${RETURN_AFTER} s"
  manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null || fail_hard "kubectl apply of job $name failed"
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]" \
    || { check "$case: Running on the other node(s)" false; restore_node; return 0; }
  check "$case: rendezvous and worker-1 placed on $LOSE" place "$name" rendezvous worker-1
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]"
  s0=$(step_off_node "$name")
  wait_for 120 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics --request-timeout=3s 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -gt $((s0 + 20)) ] 2>/dev/null"
  case $fault in
    freeze) if [ -n "${DDP_E2E_NODE_FREEZE:-}" ]; then node_cmd "$DDP_E2E_NODE_FREEZE"; else node_cmd "$DDP_E2E_NODE_STOP" --freeze; fi ;;
    partition) if [ -n "${DDP_E2E_NODE_PARTITION:-}" ]; then node_cmd "$DDP_E2E_NODE_PARTITION"; else node_cmd "$DDP_E2E_NODE_STOP" --partition; fi ;;
  esac
  t0=$(date +%s)
  s0=$(step_off_node "$name")
  say "$case: $LOSE $fault at step $s0"
  # 1. Until the return: the replacements take over (training goes on past the fault).
  read -r before last _ < <(watch_stall "$name" "$s0" "$t0" $((t0 + RETURN_AFTER)))
  # Not back before the replacements train: the return must meet them. Training still at the
  # fault's step when the watch ended stood still until it moves here; how long is held to the
  # node budget below (the watch's window alone is no bound: a loaded machine took 26 s).
  local until=$(( $(date +%s) + 120 ))
  while [ "$(step_off_node "$name")" -le "$s0" ] && [ "$(date +%s)" -lt "$until" ]; do sleep 1; done
  local went; went=$(step_off_node "$name")
  [ "$last" -gt "$s0" ] || before=$(( $(date +%s) - t0 ))
  check "$case: training went on before $LOSE came back (at step $went, from $s0)" [ "$went" -gt "$s0" ]
  # 2. The return, with the old processes in it, while the job trains.
  # The start command thaws the node (or heals its link) at once, then waits for the node's Ready
  # (a minute on a loaded machine): the old processes are back from its first second, so the
  # watch starts with it, not after it.
  node_cmd "$DDP_E2E_NODE_START" >/dev/null 2>&1 &
  local starter=$!
  back=$(date +%s)
  say "$case: $LOSE coming back $((back - t0)) s after the $fault, at step $(step_off_node "$name")"
  read -r after last still < <(watch_stall "$name" "$(step_off_node "$name")" "$back" $((t0 + JOB_TIMEOUT)))
  wait "$starter"
  while p=$(phase "$name"); [ "$p" != Succeeded ] && [ "$p" != Failed ] && [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    sleep 2
  done
  rounds=$(jget "$name" '{.status.round}')
  restarts=$(jget "$name" '{.status.restarts}')
  recoveries=$(jget "$name" '{.status.recoveries}')
  sum=$(job_checksum "$name")
  # The return must cost nothing: after it, readings never show one step for longer than 2 s
  # (STILL: the polling period left out, which a loaded machine stretched to 3 s and failed a
  # run that stood still for none of them). The loss
  # before it is the same loss as node-store-worker-freeze's, whose stall varies from run to run
  # by a few seconds: it is held to the node budget and printed beside that case's.
  local ref=""
  if [ -n "${NODE_STALLS[node-store-worker-freeze]:-}" ] && [ "${NODE_STALLS[node-store-worker-freeze]}" != none ]; then
    ref="; node-store-worker-freeze: ${NODE_STALLS[node-store-worker-freeze]} s"
  fi
  check "$case: Succeeded after $LOSE came back ($p)" [ "$p" = Succeeded ]
  check "$case: in round 0 (round ${rounds:-?})" [ "$rounds" = 0 ]
  check "$case: no restart (${restarts:-?}) and no recovery charged (${recoveries:-?})" \
    [ "${restarts:-x}/${recoveries:-x}" = 0/0 ]
  check "$case: every rank ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  [ -z "$REF" ] || check "$case: the checksum of the undisturbed run ($REF)" [ "$sum" = "$REF" ]
  check "$case: the return stalled nothing: readings showed one step for ${still:-?} s after it (at most 2 s; ${after} s between advances)" \
    [ "${still:-99}" -le 2 ]
  check "$case: the loss within ${NODE_BUDGET} s: training stood still ${before} s after the $fault${ref}" \
    [ "$before" -le "$NODE_BUDGET" ]
  local equal=no; [ -n "$sum" ] && { [ -z "$REF" ] || [ "$sum" = "$REF" ]; } && equal=yes
  timing "RESULTS | $case | rendezvous, worker-1 on $LOSE, $fault, back after $((back - t0)) s | stall ${before} s, after the return ${after} s (still ${still:-?} s) | round ${rounds:-?} | restarts ${restarts:-?}, recoveries ${recoveries:-?} | checksums equal: $equal${REF:+ (reference)} | $p |"
  kubectl -n "$NS" get events --field-selector "involvedObject.name=$name" -o jsonpath='{range .items[*]}{.reason}: {.message}{"\n"}{end}' 2>/dev/null \
    | grep -E 'RendezvousSilent|NodeSuspect|PodOffLostNode|PodReplaced|ForceDeletingPod' | sed "s/^/[$case] /"
  restore_node
}
