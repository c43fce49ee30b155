# The disturbed jobs of tests/cluster/run.sh. Sourced after lib.sh.
# shellcheck disable=SC2034  # EXTRA_SED is read by manifest (lib.sh)

# ---- the quickstart job: a scripted kill, then worker-1 deleted, then worker-0 deleted.
IP_STATE=0 IP_OLD_UID="" IP_DEL_AT=0 IP_SEEN_STEP=0 IP_SEEN_ETA="" IP_SCRAPED=0 IP_ROUNDS=""
inplace_hook() {
  local name=$1 step=$2 wide uid pod
  # Progress and ETA as `kubectl get` shows them (STEP and ETA columns).
  wide=$(kubectl -n "$NS" get ddpj "$name" -o wide --no-headers 2>/dev/null)
  local s e
  s=$(jget "$name" '{.status.progress.step}') e=$(jget "$name" '{.status.progress.etaSeconds}')
  [ -n "$s" ] && [ "$s" -gt "$IP_SEEN_STEP" ] 2>/dev/null && IP_SEEN_STEP=$s
  [ -n "$e" ] && IP_SEEN_ETA="$e (at step $s): $wide"
  IP_ROUNDS+=" $(jget "$name" '{.status.round}')"
  if [ "$IP_SCRAPED" = 0 ] && [ "$step" -gt 0 ]; then
    IP_SCRAPED=1
    check "metrics: a worker's /metrics has labelled ddp_worker_steps_total" \
      grep -q '^ddp_worker_steps_total{' <(kubectl get --raw "/api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics" 2>/dev/null)
    check "metrics: the operator's /metrics has ddp_operator_jobs" \
      grep -q '^ddp_operator_jobs' <(kubectl get --raw "/api/v1/namespaces/ddp-system/services/ddp-ddp-operator-metrics:8080/proxy/metrics" 2>/dev/null)
  fi
  case $IP_STATE in
    0|2)  # wait for the scripted heal, then delete worker-1 (state 0) or worker-0 (state 2)
      [ "$(jget "$name" '{.status.recoveries}')" -ge 1 ] 2>/dev/null || return 0
      local at=$(( IP_STATE == 0 ? STEPS * 45 / 100 : STEPS * 70 / 100 ))
      [ "$step" -ge "$at" ] || return 0
      pod=$name-worker-$(( IP_STATE == 0 ? 1 : 0 ))
      IP_OLD_UID=$(uid_of "$name" "$pod")
      [ -n "$IP_OLD_UID" ] || return 0
      say "deleting $pod at step $step"
      kubectl -n "$NS" delete pod "$pod" --wait=false >/dev/null
      IP_DEL_AT=$(date +%s) IP_STATE=$((IP_STATE + 1))
      ;;
    1|3)  # the replacement runs
      pod=$name-worker-$(( IP_STATE == 1 ? 1 : 0 ))
      uid=$(uid_of "$name" "$pod")
      [ -n "$uid" ] && [ "$uid" != "$IP_OLD_UID" ] || return 0
      timing "inplace: $pod deleted -> replacement Running in $(( $(date +%s) - IP_DEL_AT )) s (round $(jget "$name" '{.status.round}'))"
      IP_STATE=$((IP_STATE + 1))
      ;;
  esac
}

scenario_inplace() {
  local name=inplace sum reasons
  run_job "$name" InPlace $((STEPS / 4)) inplace_hook
  sum=$(job_checksum "$name")
  check "inplace: Succeeded" [ "$(phase "$name")" = Succeeded ]
  check "inplace: the scripted trainer kill healed in place (status.recoveries >= 1)" \
    [ "$(jget "$name" '{.status.recoveries}')" -ge 1 ]
  check "inplace: worker-1 then worker-0 deleted and each replaced (2 replacements seen)" [ "$IP_STATE" -ge 4 ]
  check "inplace: every heal in round 0 (rounds seen:$(sort -u <<<"${IP_ROUNDS// /$'\n'}" | xargs))" \
    [ -z "$(tr ' ' '\n' <<<"$IP_ROUNDS" | grep -v '^0\?$')" ]
  check "inplace: status.disruptions = 2 (the two deleted pods)" [ "$(jget "$name" '{.status.disruptions}')" = 2 ]
  check "inplace: every rank ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  [ -z "$REF" ] || check "inplace: the checksum of the undisturbed run ($REF)" [ "$sum" = "$REF" ]
  check "inplace: progress in kubectl get (highest STEP seen $IP_SEEN_STEP)" [ "$IP_SEEN_STEP" -gt 0 ]
  check "inplace: an ETA in kubectl get (${IP_SEEN_ETA:-never})" [ -n "$IP_SEEN_ETA" ]
  reasons=$(kubectl -n "$NS" get events --field-selector "involvedObject.kind=DDPJob,involvedObject.name=$name" \
              -o jsonpath='{.items[*].reason}' 2>/dev/null | tr ' ' '\n' | sort -u | xargs)
  check "inplace: events JobCreated, Running and AllPodsSucceeded ($reasons)" \
    bash -c "for r in JobCreated Running AllPodsSucceeded; do grep -qw \$r <<<'$reasons' || exit 1; done"
  while read -r line; do [ -z "$line" ] || timing "inplace heal stall: $line"; done < <(stalls "$name")
}

# ---- issue 31: every worker pod deleted at once mid-run.
ALL_DONE=0
all_pods_hook() {
  local name=$1 step=$2
  [ "$ALL_DONE" = 0 ] && [ "$step" -ge $((STEPS * 45 / 100)) ] || return 0
  say "deleting every worker pod of $name at step $step"
  kubectl -n "$NS" delete pod -l "ddp.dev/job-name=$name,ddp.dev/replica-index" --wait=false >/dev/null
  ALL_DONE=1
}

scenario_all_pods() {
  local recovery=$1 name sum
  name=all-$(tr 'A-Z' 'a-z' <<<"$recovery")
  ALL_DONE=0
  run_job "$name" "$recovery" none all_pods_hook
  sum=$(job_checksum "$name")
  check "$name: every worker pod was deleted at once mid-run" [ "$ALL_DONE" = 1 ]
  check "$name: Succeeded" [ "$(phase "$name")" = Succeeded ]
  check "$name: every rank ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  [ -z "$REF" ] || check "$name: the checksum of the undisturbed run ($REF)" [ "$sum" = "$REF" ]
  while read -r line; do [ -z "$line" ] || timing "$name heal stall: $line"; done < <(stalls "$name")
}

# ---- a spare takes the rank of a deleted pod: nobody waits for a replacement pod.
SP_DONE=0 SP_AT=0
spare_hook() {
  local name=$1 step=$2
  [ "$SP_DONE" = 0 ] && [ "$step" -ge $((STEPS * 45 / 100)) ] || return 0
  [ -n "$(uid_of "$name" "$name-spare-0")" ] || return 0  # the spare is up
  say "deleting $name-worker-0 at step $step (the spare is Running)"
  kubectl -n "$NS" delete pod "$name-worker-0" --wait=false >/dev/null
  SP_DONE=1 SP_AT=$step
}

scenario_spare() {
  local name=spare sum
  EXTRA_SED=(-e 's/^    recovery: InPlace$/    recovery: InPlace\n    spares: 1/')
  run_job "$name" InPlace none spare_hook
  EXTRA_SED=()
  sum=$(job_checksum "$name")
  check "spare: worker-0 deleted mid-run with the spare Running (at step $SP_AT)" [ "$SP_DONE" = 1 ]
  check "spare: Succeeded" [ "$(phase "$name")" = Succeeded ]
  check "spare: still round 0" [ "$(jget "$name" '{.status.round}')" = 0 ]
  check "spare: the spare logged taking rank 0" \
    grep -q 'node rank 0: rank 0' <(kubectl -n "$NS" logs "$name-spare-0" 2>/dev/null)
  check "spare: every rank ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  [ -z "$REF" ] || check "spare: the checksum of the undisturbed run ($REF)" [ "$sum" = "$REF" ]
  while read -r line; do [ -z "$line" ] || timing "spare heal stall: $line"; done < <(stalls "$name")
}

# ---- a resize: kubectl scale from 2 to 3 mid-run (spec.elastic 2..3).
RS_STATE=0 RS_AT=0 RS_T=0
resize_hook() {
  local name=$1 step=$2 ws
  case $RS_STATE in
    0) [ "$step" -ge $((STEPS * 30 / 100)) ] || return 0
       say "kubectl scale ddpj $name --replicas=3 at step $step"
       kubectl -n "$NS" scale ddpj "$name" --replicas=3 >/dev/null || return 0
       RS_STATE=1 RS_AT=$step RS_T=$(date +%s) ;;
    1) ws=$(jget "$name" '{.status.worldSize}')
       [ "$ws" = 3 ] && [ "$step" -gt "$RS_AT" ] || return 0
       timing "resize: scale 2 -> 3 at step $RS_AT -> training at world size 3 (step $step) after $(( $(date +%s) - RS_T )) s (round $(jget "$name" '{.status.round}'))"
       RS_STATE=2 ;;
  esac
}

scenario_resize() {
  local name=resize sum
  EXTRA_SED=(-e 's/^  replicas: 2$/  replicas: 2\n  elastic:\n    minReplicas: 2\n    maxReplicas: 3/')
  run_job "$name" InPlace none resize_hook
  EXTRA_SED=()
  sum=$(job_checksum "$name" 3)
  check "resize: scaled to 3 mid-run (at step $RS_AT)" [ "$RS_STATE" -ge 1 ]
  check "resize: trained at world size 3 after the scale" [ "$RS_STATE" = 2 ]
  # InPlace with spec.elastic: the group resized at its next generation, no new round.
  check "resize: in place, round 0 ($(jget "$name" '{.status.round}'))" [ "$(jget "$name" '{.status.round}')" = 0 ]
  check "resize: Succeeded" [ "$(phase "$name")" = Succeeded ]
  check "resize: the 3 ranks ended at step $STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
}

# ---- the API server refuses a template with mistyped fields (the CRD's pod template schema), so
# no such object reaches the operator; a typo'd manifest never touches another job.
scenario_schema() {
  local out bad
  for bad in 's/containerPort: 9400/containerPort: "9400"/' 's/- name: OMP_NUM_THREADS/- name: 5/'; do
    out=$(manifest schema-typo InPlace none | sed -e "$bad" | kubectl -n "$NS" apply --validate=false -f - 2>&1)
    check "schema: the API server refuses $bad (${out:0:200})" grep -qi invalid <<<"$out"
    check "schema: no DDPJob was created for $bad" bash -c "! kubectl -n $NS get ddpj schema-typo >/dev/null 2>&1"
    kubectl -n "$NS" delete ddpj schema-typo --wait=false >/dev/null 2>&1
  done
}
