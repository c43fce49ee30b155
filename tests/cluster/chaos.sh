# `ddp-operator chaos` on a real cluster (issue "Recovery you can see and rehearse"): sourced by
# run.sh after node_loss.sh, whose functions and settings (DDP_E2E_LOSE_NODE) it uses. One InPlace
# job with worker-1 alone on the lost node; the five failures injected in turn by the command,
# with the user's credentials (kubectl): kill-trainer 1, delete-pod 1, freeze-pod 1, drain-node
# of worker-1's node, kill-rendezvous. After each: the command said the job recovered (exit 0),
# and `kubectl get ddpj -o json` holds the incident with the right kind, pod, node and rank, a
# stall within 10% of the one rank 0 logged itself (`rank 0: training stood still Xs`), and the
# command's report names the same incident.
#
# Environment: DDP_OPERATOR_BIN, the ddp-operator to run the command with (default the build
# tree's). Case (E2E_ONLY name): chaos.

# chaos_incident NAME BEFORE: the first incident numbered past BEFORE, as
# "kind|pod|node|rank|stallSeconds|source|outcome"; empty when none.
chaos_incident() {
  kubectl -n "$NS" get ddpj "$1" -o json 2>/dev/null | python3 -c '
import json, sys
st = json.load(sys.stdin).get("status", {})
rows, total, before = st.get("incidents", []), st.get("incidentsTotal", 0), int(sys.argv[1])
for k, i in enumerate(rows):
    if total - len(rows) + k + 1 > before:
        print("|".join(str(i.get(f, "")) for f in ("kind", "pod", "node", "rank", "stallSeconds", "source", "outcome")))
        break
' "$2"
}

# chaos_logged NAME SKIP: the stalls rank 0 logged (worker-0's log), after the first SKIP.
chaos_logged() {
  kubectl -n "$NS" logs "$1-worker-0" 2>/dev/null | grep -Eo 'rank 0: training stood still [0-9.eE+-]+s' \
    | grep -Eo '[0-9.eE+-]+s$' | tr -d s | tail -n "+$(( $2 + 1 ))"
}

scenario_chaos() {
  local op=${DDP_OPERATOR_BIN:-$ROOT/build/operator/ddp-operator}
  [ -x "$op" ] || { say "skip chaos: no ddp-operator at $op (DDP_OPERATOR_BIN)"; timing "chaos: skipped"; return 0; }
  local why; why=$(node_loss_unavailable)
  if [ -n "$why" ]; then say "skip chaos: $why"; timing "chaos: skipped ($why)"; return 0; fi
  local name=chaotic failure kind pod rank node before logged_before out rc inc stall logged
  local k p n r source outcome
  kubectl cordon "$LOSE" >/dev/null
  say "job $name: recovery InPlace, worker-1 on $LOSE, five failures by ddp-operator chaos"
  STEPS=$((STEPS * 5)) manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null \
    || fail_hard "kubectl apply of job $name failed"
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}')\" = Running ]" \
    || { check "chaos: Running" false; restore_node; return 0; }
  wait_for 240 bash -c "[ \$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-worker-0:9400/proxy/metrics 2>/dev/null | awk '/^ddp_worker_steps_total[{ ]/ {print int(\$NF); exit}') -ge 100 ] 2>/dev/null"
  check "chaos: worker-1 placed on $LOSE" place "$name" worker-1
  for failure in "kill-trainer 1" "delete-pod 1" "freeze-pod 1 15" "drain-node $LOSE" "kill-rendezvous"; do
    case $failure in
      kill-trainer*) kind=TrainerExit pod=$name-worker-1 rank=1 ;;
      delete-pod*) kind=PodLost pod=$name-worker-1 rank=1 ;;
      # A container cannot stop its PID 1: the supervisor restarts the frozen trainer.
      freeze-pod*) kind=TrainerExit pod=$name-worker-1 rank=1 ;;
      drain-node*) kind=Drain pod=$name-worker-1 rank=1 ;;
      kill-rendezvous) kind=PodLost pod=$name-rendezvous rank=-1 ;;
    esac
    wait_for 120 bash -c "[ \"\$(kubectl -n $NS get pod $pod -o jsonpath='{.status.phase}/{.metadata.deletionTimestamp}' 2>/dev/null)\" = Running/ ]"
    sleep 10  # training at full pace again before the next failure
    node=$(kubectl -n "$NS" get pod "$pod" -o jsonpath='{.spec.nodeName}' 2>/dev/null)
    before=$(jget "$name" '{.status.incidentsTotal}'); before=${before:-0}
    logged_before=$(chaos_logged "$name" 0 | wc -l)
    # shellcheck disable=SC2086 # the failure's words are its arguments
    out=$("$op" chaos ${KUBECONFIG:+--kubeconfig "$KUBECONFIG"} -n "$NS" "$name" $failure --timeout 240 2>&1); rc=$?
    echo "$out" | sed "s/^/[chaos $failure] /"
    check "chaos $failure: the command says the job recovered (exit $rc)" [ "$rc" = 0 ]
    inc=$(chaos_incident "$name" "$before")
    say "chaos $failure: incident $inc"
    IFS='|' read -r k p n r stall source outcome <<<"$inc"
    check "chaos $failure: a $kind of pod $pod, rank $rank, on node ${node:-?} ($k $p $r $n)" \
      [ "$k|$p|$r|$n" = "$kind|$pod|$rank|$node" ]
    logged=$(chaos_logged "$name" "$logged_before" | tail -n 1)
    if [ "$failure" = kill-rendezvous ]; then
      # Training goes on through a lost store in place: no stall to compare when none was logged.
      check "chaos $failure: a stall recorded ($stall s; rank 0 logged ${logged:-none})" [ -n "$stall" ]
    else
      check "chaos $failure: the stall ($stall s, from the $source) within 10% of rank 0's own (${logged:-none} s)" \
        python3 -c "import sys; a, b = float('${stall:-nan}'), float('${logged:-nan}'); sys.exit(0 if abs(a - b) <= 0.1 * b + 0.002 else 1)"
    fi
    check "chaos $failure: the command's report names it ($k of pod $p, outcome $outcome)" \
      bash -c '[[ $1 == *"$2 of pod $3"* && $1 == *"outcome: $4"* ]]' _ "$out" "$k" "$p" "$outcome"
    timing "RESULTS | chaos | $failure | $k $p node $n rank $r | stall $stall s ($source), rank 0 logged ${logged:-none} s | $outcome |"
  done
  check "chaos: still training in round 0 ($(phase "$name"), round $(jget "$name" '{.status.round}'))" \
    [ "$(phase "$name")/$(jget "$name" '{.status.round}')" = Running/0 ]
  kubectl -n "$NS" delete ddpj "$name" --wait=false >/dev/null
  restore_node
}
