# A loss without a spare on a real cluster (docs/failures-and-elasticity.md "A loss without a
# spare"): sourced by run.sh after node_loss.sh, whose node commands and helpers it uses. The
# quickstart job at 3 pods with spec.elastic (minReplicas 2), no spare; worker-1 alone on the
# node to lose, which is then frozen or killed and not brought back before the job ends. The
# group must go on at 2 within the liveness timeout and a heal, without waiting for worker-1's
# replacement to start (the status says it runs smaller, reason MemberLost), then grow back to
# 3 when the replacement is ready; round 0, no checkpoint read, Succeeded with the 3 ranks on one
# checksum. Prints the stall and what the group did as rows for bench/RESULTS.md.
#
# Cases (E2E_ONLY names): shrink-node-freeze, shrink-node-kill. They run when node_loss.sh's
# settings are there (DDP_E2E_LOSE_NODE, DDP_E2E_NODE_STOP, DDP_E2E_NODE_START); skipped otherwise.
# DDP_E2E_SHRINK_BUDGET: the stall each must stay under, seconds (default 15: the liveness timeout,
# 10 s, + one re-formation and the suite's 1 s polling).

SHRINK_BUDGET=${DDP_E2E_SHRINK_BUDGET:-15}

# world_of NAME: the group's world size as its rendezvous pod reports it now
# (ddp_group_world_size; status.worldSize follows it only at the operator's next progress read).
world_of() {
  kubectl get --raw "/api/v1/namespaces/$NS/pods/$1-rendezvous:9400/proxy/metrics" --request-timeout=3s 2>/dev/null |
    awk '/^ddp_group_world_size[{ ]/ {print int($NF); exit}'
}

# log_time LINE: seconds of the day of a glog line's time (I1205 16:16:23.017 ...).
log_time() { awk '{split($2, t, ":"); printf "%.3f\n", t[1] * 3600 + t[2] * 60 + t[3]; exit}' <<<"$1"; }

# iso_time STAMP: seconds of the day of an RFC 3339 UTC time (2026-12-05T16:16:24Z).
iso_time() { awk -F'[T:Z]' '{printf "%.3f\n", $2 * 3600 + $3 * 60 + $4; exit}' <<<"$1"; }

# charges NAME: disruptions + recoveries in the job's status.
charges() { echo $(( $(jget "$1" '{.status.disruptions}') + $(jget "$1" '{.status.recoveries}') )); }

# rendezvous_log NAME: the rendezvous pod's log (the group's decisions).
rendezvous_log() { kubectl -n "$NS" logs "$1-rendezvous" --request-timeout=5s 2>/dev/null; }

# below_reason NAME: "Status/Reason" of the job's BelowSize condition.
below_reason() {
  jget "$1" '{range .status.conditions[?(@.type=="BelowSize")]}{.status}/{.reason}{end}'
}

# scenario_shrink CASE FAULT: FAULT is freeze or kill; worker-1 goes on the lost node.
scenario_shrink() {
  local case=$1 fault=$2
  local why; why=$(node_loss_unavailable)
  if [ -n "$why" ]; then say "skip $case: $why"; timing "$case: skipped ($why)"; return 0; fi
  local name=$case t0 s0 stall=none p rounds reads sum below_seen=no world_then=? repl_then=? grew=no
  kubectl cordon "$LOSE" >/dev/null
  say "job $name: 3 pods, spec.elastic 2..3, no spare; worker-1 on $LOSE, then $LOSE: $fault"
  EXTRA_SED=(-e 's/^  replicas: 2$/  replicas: 3\n  elastic:\n    minReplicas: 2\n    maxReplicas: 3/')
  manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null || fail_hard "kubectl apply of job $name failed"
  EXTRA_SED=()
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]" \
    || { check "$case: Running on the other node(s)" false; restore_node; return 0; }
  wait_for 240 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -ge $((STEPS / 10)) ]" 2>/dev/null
  check "$case: worker-1 placed on $LOSE" place "$name" worker-1
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.worldSize}')\" = 3 ]"
  s0=$(step_off_node "$name")
  wait_for 120 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics --request-timeout=3s 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -gt $((s0 + 20)) ] 2>/dev/null"
  local old_uid; old_uid=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid}')
  # place() deleted worker-1 to put it on $LOSE (a disruption, and already a shrink and a growth
  # back): the fault's charge is counted from here.
  local c0; c0=$(charges "$name")
  # That shrink and growth back are in the rendezvous pod's log too: the fault's decisions are
  # the lines after these.
  local n0; n0=$(rendezvous_log "$name" | wc -l)
  case $fault in
    freeze) if [ -n "${DDP_E2E_NODE_FREEZE:-}" ]; then node_cmd "$DDP_E2E_NODE_FREEZE"; else node_cmd "$DDP_E2E_NODE_STOP" --freeze; fi ;;
    kill) node_cmd "$DDP_E2E_NODE_STOP" ;;
  esac
  t0=$(date +%s)
  s0=$(step_off_node "$name")
  say "$case: $LOSE $fault at step $s0"
  # The stall: the longest time the step on the pods off the lost node stood still, from the
  # fault until they trained 400 steps past it. When training first moves on after the fault:
  # the group's size then, and whether worker-1's replacement was running by then (it must not
  # have been waited for).
  local last=$s0 t_last=$t0 longest=0 cur now uid ph
  while [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    p=$(phase "$name")
    [ "$p" = Succeeded ] || [ "$p" = Failed ] && break
    [ "$(below_reason "$name")" = True/MemberLost ] && below_seen=yes
    cur=$(step_off_node "$name"); now=$(date +%s)
    if [ "$cur" -gt "$last" ]; then
      [ $((now - t_last)) -gt "$longest" ] && longest=$((now - t_last))
      if [ "$world_then" = ? ] && [ $((now - t0)) -gt 2 ]; then
        world_then=$(world_of "$name")
        read -r uid ph < <(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid} {.status.phase}' 2>/dev/null)
        repl_then=no; [ -n "$uid" ] && [ "$uid" != "$old_uid" ] && [ "$ph" = Running ] && repl_then=yes
        say "$case: training went on at step $cur, $((now - t0)) s after the fault: world size $world_then, worker-1's replacement running: $repl_then"
      fi
      last=$cur t_last=$now
      [ "$cur" -gt $((s0 + 400)) ] && break
    fi
    sleep 1
  done
  [ "$last" -gt "$s0" ] && stall=$longest
  # The growth back, then the end, with the node still lost.
  wait_for 300 bash -c "kubectl -n $NS logs $name-rendezvous --request-timeout=5s 2>/dev/null | grep -q '2 -> 3 rank(s)'" && grew=yes
  # The group's decisions and the replacement's start, read now: the rendezvous pod goes with
  # the job's end. On the kit a replacement starts in 1-3 s and joins a few seconds later, so
  # what shows the group did not wait for it is the order: the shrink decided before the
  # replacement's container started.
  local rdzv; rdzv=$(rendezvous_log "$name" | tail -n +$((n0 + 1)))
  local t_shrink t_grow t_repl started
  t_shrink=$(log_time "$(grep -m1 'resizes in place: 3 -> 2 rank' <<<"$rdzv")")
  t_grow=$(log_time "$(grep 'resizes in place: 2 -> 3 rank' <<<"$rdzv" | tail -1)")
  started=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid} {.status.containerStatuses[0].state.running.startedAt}' 2>/dev/null)
  [ "${started%% *}" != "$old_uid" ] && t_repl=$(iso_time "${started#* }")
  while p=$(phase "$name"); [ "$p" != Succeeded ] && [ "$p" != Failed ] && [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    [ "$(below_reason "$name")" = True/MemberLost ] && below_seen=yes
    sleep 2
  done
  rounds=$(jget "$name" '{.status.round}')
  sum=$(job_checksum "$name" 3)
  reads=$(for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" --field-selector="spec.nodeName!=$LOSE" -o jsonpath='{.items[*].metadata.name}'); do
            kubectl -n "$NS" logs "$pod" --request-timeout=5s 2>/dev/null | grep -c 'resumed from checkpoint'; done | awk '{s += $1} END {print s + 0}')
  check "$case: Succeeded without $LOSE coming back ($p)" [ "$p" = Succeeded ]
  check "$case: training went on within ${SHRINK_BUDGET} s (stall ${stall} s)" \
    bash -c "[ '$stall' != none ] && [ '$stall' -le '$SHRINK_BUDGET' ]"
  # Without room the group would decide no shrink at all and wait; startedAt has whole seconds.
  check "$case: it went on at 2 before the replacement started (shrunk at ${t_shrink:-?} s of the day, replacement started at ${t_repl:-?}, grew back at ${t_grow:-?})" \
    awk -v a="$t_shrink" -v b="$t_repl" 'BEGIN {exit !(a != "" && b != "" && a + 0 < b + 1)}'
  # worker-1 holds node rank 1, or 2 when place() replaced it (its replacement grew the group
  # back into rank 2): the pod above it, if any, moves into its rank.
  local moved; moved=$(grep -o "pod $name-worker-[0-9] moves from node rank 2 to 1" <<<"$rdzv" | head -1)
  local dropped=no
  grep -q "pod $name-worker-1 lost" <<<"$rdzv" &&
    grep -q "no idle pod for the lost member's rank; the group goes on without it" <<<"$rdzv" && dropped=yes
  check "$case: the group dropped worker-1 at once ($dropped; ${moved:-worker-1 held the highest node rank})" \
    [ "$dropped" = yes ]
  check "$case: the status said why it ran smaller (BelowSize MemberLost seen: $below_seen)" [ "$below_seen" = yes ]
  check "$case: it grew back to 3 once the replacement was ready ($grew)" [ "$grew" = yes ]
  check "$case: in round 0 (round ${rounds:-?})" [ "$rounds" = 0 ]
  check "$case: no checkpoint read ($reads)" [ "$reads" = 0 ]
  check "$case: the 3 ranks ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  local c1; c1=$(charges "$name")
  check "$case: the loss charged once (disruptions + recoveries $c0 before it, $c1 at the end)" \
    [ "$((c1 - c0))" = 1 ]
  timing "RESULTS | $case | worker-1 on $LOSE, $fault; 3 pods, minReplicas 2, no spare | stall ${stall} s | shrunk $(awk -v a="$t_shrink" -v b="$t_repl" 'BEGIN {printf "%.1f", b - a}') s before the replacement started; grew back $(awk -v a="$t_shrink" -v b="$t_grow" 'BEGIN {printf "%.1f", b - a}') s after the shrink | world size when training went on $world_then (polled) | grew back: $grew | round ${rounds:-?} | checkpoint reads $reads | $p |"
  grep -E 'group authority: (pod .* lost|pod .* moves|resize:)|resizes in place' <<<"$rdzv" | sed "s/^/[$case] /"
  restore_node
}
