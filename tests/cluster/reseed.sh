# The rendezvous pod lost in the second act of a failure (issue 51, docs/failures-and-elasticity.md
# "The rendezvous pod"): sourced by run.sh. The store lives in the rendezvous pod; when that pod
# goes, its replacement starts from the members' copy of who held which rank and at what size.
#   reseed-spare   spares: 1; worker-0 deleted, the spare takes rank 0 in round 0; once
#                  worker-0's replacement runs (idle), the rendezvous pod is deleted: the spare
#                  keeps rank 0, no pod ends Fenced or is replaced, nothing is charged
#   reseed-shrunk  3 pods, spec.elastic 2..3, no spare; worker pods that find a flag file on the
#                  checkpoint volume start 90 s late (an init container), so worker-1's
#                  replacement is still starting while the group runs shrunk at 2; the
#                  rendezvous pod is deleted then, and a trainer is killed after it: the
#                  group re-forms at 2 within seconds each time, grows back to 3 when the
#                  replacement is ready, round 0, no checkpoint read, charged only for worker-1's
#                  deletion and the trainer kill (`ddp-operator chaos kill-trainer 0`: the build
#                  tree's, or DDP_OPERATOR_BIN)
#   reseed-worker  2 pods, no spare; the rendezvous pod deleted, and worker-1 deleted once the
#                  old rendezvous pod has gone: worker-1's SIGTERM finds no store. It departs
#                  alone through the new store: worker-0's trainer never stops, nothing is
#                  charged as a recovery, round 0, no checkpoint read
# Uses ROOT, NS, STEPS, REF and the functions of lib.sh, node_loss.sh (wait_for) and shrink.sh
# (world_of, charges, rendezvous_log).

# Worker pods wait RS_SLOW_S before their trainer starts when the job's flag file exists on the
# checkpoint volume: only the replacements started after the flag is set.
RS_SLOW_S=${DDP_E2E_SLOW_START:-90}
reseed_slow_start_sed() {
  local flag=/checkpoints/.e2e-slow-start-$1
  EXTRA_SED+=(-e "s|^      containers:\$|      initContainers:\\
        - name: slow-start\\
          image: ddp-worker-cpu:0.1.0\\
          command: [sh, -c, 'if [ -e $flag ]; then sleep $RS_SLOW_S; fi']\\
          volumeMounts:\\
            - name: checkpoints\\
              mountPath: /checkpoints\\
      containers:|")
}

# uids NAME POD...: "pod=uid" of each pod (empty uid when absent).
uids() {
  local name=$1 pod; shift
  for pod in "$@"; do echo "$pod=$(kubectl -n "$NS" get pod "$name-$pod" -o jsonpath='{.metadata.uid}' 2>/dev/null)"; done
}

# fenced_logs NAME: the job's pods whose supervisor logged a Fenced end.
fenced_logs() {
  local pod
  for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" -o jsonpath='{.items[*].metadata.name}'); do
    kubectl -n "$NS" logs "$pod" --request-timeout=5s 2>/dev/null | grep -q 'supervisor: Fenced' && echo "$pod"
  done
}

# delete_rendezvous NAME: deletes the rendezvous pod and waits until its replacement (a new uid)
# runs; prints the seconds that took.
delete_rendezvous() {
  local name=$1 old t0
  old=$(kubectl -n "$NS" get pod "$name-rendezvous" -o jsonpath='{.metadata.uid}')
  t0=$(date +%s)
  kubectl -n "$NS" delete pod "$name-rendezvous" --wait=false >/dev/null
  wait_for 120 bash -c "[ -n \"\$(kubectl -n $NS get pod $name-rendezvous -o jsonpath='{.metadata.uid}/{.status.phase}' 2>/dev/null | grep -v '^$old/' | grep '/Running\$')\" ]"
  echo $(( $(date +%s) - t0 ))
}

# step_past NAME STEP: the job's step (its running pods' highest, lib.sh's job_step) is past STEP.
step_past() { [ "$(job_step "$1")" -gt "$2" ] 2>/dev/null; }

# steps_after NAME STEP SECONDS: true when the job's step passes STEP within SECONDS; prints the
# seconds it took.
steps_after() {
  local t0; t0=$(date +%s)
  wait_for "$3" step_past "$1" "$2" || return 1
  echo $(( $(date +%s) - t0 ))
}

scenario_reseed_spare() {
  local name=reseed-spare s0 before after c0 c1 rdzv took went sum fenced p
  say "job $name: spares 1; worker-0 deleted (the spare takes rank 0), then the rendezvous pod"
  EXTRA_SED=(-e 's/^    recovery: InPlace$/    recovery: InPlace\n    spares: 1/')
  # Three times the steps: the idle worker-0 goes with the job's end, and the checks after the
  # store's loss need it there (on the 2.6 image the job of STEPS ended 8 s after it).
  STEPS=$((STEPS * 3)) manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null \
    || fail_hard "kubectl apply of job $name failed"
  EXTRA_SED=()
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get pod $name-spare-0 -o jsonpath='{.status.phase}' 2>/dev/null)\" = Running ]"
  steps_after "$name" $((STEPS / 5)) 300 >/dev/null
  kubectl -n "$NS" delete pod "$name-worker-0" --wait=false >/dev/null
  say "$name: worker-0 deleted at step $(job_step "$name")"
  wait_for 120 bash -c "kubectl -n $NS logs $name-spare-0 2>/dev/null | grep -q 'node rank 0: rank 0'"
  check "$name: the spare took rank 0" bash -c "kubectl -n $NS logs $name-spare-0 2>/dev/null | grep -q 'node rank 0: rank 0'"
  # worker-0's replacement runs, idle: the pod the old store would have handed rank 0 back to.
  wait_for 120 bash -c "[ -n \"\$(kubectl -n $NS get pod $name-worker-0 -o jsonpath='{.status.phase}' 2>/dev/null | grep Running)\" ]"
  sleep 3
  s0=$(job_step "$name")
  c0=$(charges "$name")
  before=$(uids "$name" worker-0 worker-1 spare-0)
  took=$(delete_rendezvous "$name")
  say "$name: rendezvous pod deleted at step $s0; its replacement ran after ${took} s"
  went=$(steps_after "$name" $((s0 + 20)) 120) || went=none
  check "$name: training went on after the store's replacement ($went s after it ran)" [ "$went" != none ]
  # The idle worker-0 goes with the job's end: every pod is compared while it still trains.
  sleep 15
  after=$(uids "$name" worker-0 worker-1 spare-0)
  check "$name: no pod replaced in the 15 s after training went on (${after//$'\n'/ })" [ "$before" = "$after" ]
  rdzv=$(rendezvous_log "$name")
  wait_for "$JOB_TIMEOUT" bash -c "p=\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}'); [ \"\$p\" = Succeeded ] || [ \"\$p\" = Failed ]"
  after=$(uids "$name" worker-1 spare-0)
  c1=$(charges "$name")
  sum=$(STEPS=$((STEPS * 3)) job_checksum "$name")
  fenced=$(fenced_logs "$name" | tr '\n' ' ')
  check "$name: Succeeded ($(phase "$name"))" [ "$(phase "$name")" = Succeeded ]
  check "$name: round 0 ($(jget "$name" '{.status.round}'))" [ "$(jget "$name" '{.status.round}')" = 0 ]
  check "$name: the two holders never replaced (${after//$'\n'/ })" [ "$(grep -v '^worker-0=' <<<"$before")" = "$after" ]
  check "$name: no pod ended Fenced (${fenced:-none})" [ -z "$fenced" ]
  check "$name: the spare still held rank 0 at the end" \
    bash -c "kubectl -n $NS logs $name-spare-0 2>/dev/null | grep -Eq 'summary rank=0 world_size=2 step=$((STEPS * 3)) '"
  check "$name: nothing charged for the store's loss ($c0 before, $c1 at the end)" [ "$c0" = "$c1" ]
  check "$name: both ranks ended at step $((STEPS * 3)) with one checksum (${sum:-none})" [ -n "$sum" ]
  timing "RESULTS | $name | the store's pod deleted with the spare holding rank 0 | replacement store running after ${took} s; training on ${went} s later | charged $((c1 - c0)) | $(phase "$name") |"
  grep -E 'group authority: |seed' <<<"$rdzv" | head -n 20 | sed "s/^/[$name] /"
}

scenario_reseed_shrunk() {
  local name=reseed-shrunk s0 c0 c_end rounds reads sum fenced took went w grew=no before after old1 repl
  local op=${DDP_OPERATOR_BIN:-$ROOT/build/operator/ddp-operator} out rc
  say "job $name: 3 pods, spec.elastic 2..3, no spare; worker-1 deleted (its replacement starts ${RS_SLOW_S} s late), the rendezvous pod deleted while the group runs at 2, then rank 0's trainer killed (ddp-operator chaos)"
  EXTRA_SED=(-e 's/^  replicas: 2$/  replicas: 3\n  elastic:\n    minReplicas: 2\n    maxReplicas: 3/')
  reseed_slow_start_sed "$name"
  STEPS=$((STEPS * 3)) manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null \
    || fail_hard "kubectl apply of job $name failed"
  EXTRA_SED=()
  wait_for 240 bash -c "[ \"\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.worldSize}')\" = 3 ]"
  steps_after "$name" $((STEPS / 5)) 300 >/dev/null
  kubectl -n "$NS" exec "$name-worker-0" -c worker -- sh -c "touch /checkpoints/.e2e-slow-start-$name" \
    || check "$name: the slow-start flag written" false
  old1=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid}')
  c0=$(charges "$name")
  kubectl -n "$NS" delete pod "$name-worker-1" --wait=false >/dev/null
  say "$name: worker-1 deleted at step $(job_step "$name")"
  wait_for 60 bash -c "[ \"\$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-rendezvous:9400/proxy/metrics --request-timeout=3s 2>/dev/null | awk '/^ddp_group_world_size[{ ]/ {print int(\$NF); exit}')\" = 2 ]"
  # The deleted pod stays while it terminates: its replacement is the pod under a new uid.
  wait_for 60 bash -c "u=\$(kubectl -n $NS get pod $name-worker-1 -o jsonpath='{.metadata.uid}' 2>/dev/null); [ -n \"\$u\" ] && [ \"\$u\" != $old1 ]"
  w=$(world_of "$name")
  repl=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid} {.status.phase}' 2>/dev/null)
  check "$name: the group runs shrunk at 2 while worker-1's replacement starts (world $w; replacement ${repl#* })" \
    bash -c "[ '$w' = 2 ] && [ '${repl%% *}' != '$old1' ] && [ '${repl#* }' != Running ]"
  s0=$(job_step "$name")
  before=$(uids "$name" worker-0 worker-2)
  took=$(delete_rendezvous "$name")
  went=$(steps_after "$name" $((s0 + 20)) 60) || went=none
  # A new store's page says the size asked for until its first members hand it their copy of the
  # old membership (within a second of its start): the size is read once they have.
  wait_for 10 bash -c "[ \"\$(kubectl get --raw /api/v1/namespaces/$NS/pods/$name-rendezvous:9400/proxy/metrics --request-timeout=3s 2>/dev/null | awk '/^ddp_group_world_size[{ ]/ {print int(\$NF); exit}')\" = 2 ]"
  w=$(world_of "$name")
  repl=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.status.phase}' 2>/dev/null)
  say "$name: rendezvous pod deleted at step $s0; replacement ran after ${took} s; training on ${went} s later at world size ${w:-?} (worker-1's replacement: ${repl:-?})"
  check "$name: after the store's loss the group trains on within seconds (${went} s after the new store ran)" \
    bash -c "[ '$went' != none ] && [ '$went' -le 20 ]"
  check "$name: ... at the size it had shrunk to, the replacement still starting (world ${w:-?}, replacement ${repl:-?})" \
    bash -c "[ '$w' = 2 ] && [ '$repl' != Running ]"
  if [ -x "$op" ]; then
    out=$("$op" chaos ${KUBECONFIG:+--kubeconfig "$KUBECONFIG"} -n "$NS" "$name" kill-trainer 0 --timeout 120 2>&1); rc=$?
    echo "$out" | sed "s/^/[$name chaos kill-trainer 0] /"
    check "$name: then rank 0's trainer killed: the new store's group heals it (ddp-operator chaos exit $rc)" [ "$rc" = 0 ]
  else
    check "$name: a ddp-operator to kill a trainer with ($op; DDP_OPERATOR_BIN)" false
  fi
  wait_for 240 bash -c "kubectl -n $NS logs $name-rendezvous --request-timeout=5s 2>/dev/null | grep -q '2 -> 3 rank(s)'" && grew=yes
  check "$name: the new store grew the group back to 3 when the replacement was ready ($grew)" [ "$grew" = yes ]
  # The flag goes now: the volume outlives the job, and the next run's pods must start at once.
  kubectl -n "$NS" exec "$name-worker-0" -c worker -- rm -f "/checkpoints/.e2e-slow-start-$name" >/dev/null 2>&1
  after=$(uids "$name" worker-0 worker-2)
  fenced=$(fenced_logs "$name" | tr '\n' ' ')
  wait_for "$JOB_TIMEOUT" bash -c "p=\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}'); [ \"\$p\" = Succeeded ] || [ \"\$p\" = Failed ]"
  rounds=$(jget "$name" '{.status.round}')
  c_end=$(charges "$name")
  sum=$(STEPS=$((STEPS * 3)) job_checksum "$name" 3)
  reads=$(for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" -o jsonpath='{.items[*].metadata.name}'); do
            kubectl -n "$NS" logs "$pod" --request-timeout=5s 2>/dev/null | grep -c 'resumed from checkpoint'; done | awk '{s += $1} END {print s + 0}')
  check "$name: Succeeded ($(phase "$name"))" [ "$(phase "$name")" = Succeeded ]
  check "$name: round 0 (${rounds:-?})" [ "$rounds" = 0 ]
  check "$name: no checkpoint read ($reads)" [ "$reads" = 0 ]
  check "$name: rank 0's trainer exit healed in place (status.incidents)" \
    bash -c "kubectl -n $NS get ddpj $name -o jsonpath='{range .status.incidents[*]}{.kind}/{.pod}/{.outcome} {end}' | grep -q 'TrainerExit/$name-worker-0/HealedInPlace'"
  check "$name: worker-0 and worker-2 never replaced (${after//$'\n'/ })" [ "$before" = "$after" ]
  check "$name: no pod ended Fenced (${fenced:-none})" [ -z "$fenced" ]
  check "$name: charged for worker-1's deletion and the trainer kill only (disruptions + recoveries $c0 before, $c_end at the end)" \
    [ "$((c_end - c0))" = 2 ]
  check "$name: the 3 ranks ended at step $((STEPS * 3)) with one checksum (${sum:-none})" [ -n "$sum" ]
  timing "RESULTS | $name | the store's pod deleted while the group ran at 2 of 3, then a trainer killed | replacement store running after ${took} s; training on ${went} s later at world size ${w:-?} | grew back: $grew | round ${rounds:-?} | checkpoint reads $reads | charged $((c_end - c0)) | $(phase "$name") |"
}

scenario_reseed_worker() {
  local name=reseed-worker s0 r0 rdzv t0 went recov reads sum before after logf stopped path
  say "job $name: 2 pods, no spare; the rendezvous pod deleted, then worker-1 as soon as it has gone"
  STEPS=$((STEPS * 2)) manifest "$name" InPlace none | kubectl -n "$NS" apply -f - >/dev/null \
    || fail_hard "kubectl apply of job $name failed"
  steps_after "$name" $((STEPS / 5)) 300 >/dev/null
  r0=$(jget "$name" '{.status.recoveries}')
  before=$(uids "$name" worker-0)
  logf=$(mktemp)
  kubectl -n "$NS" logs -f "$name-worker-1" > "$logf" 2>&1 &
  local follow=$!
  s0=$(job_step "$name")
  t0=$(date +%s)
  # --wait: returns once the old pod is gone (its store with it); worker-1's SIGTERM comes next.
  kubectl -n "$NS" delete pod "$name-rendezvous" --timeout=60s >/dev/null
  kubectl -n "$NS" delete pod "$name-worker-1" --wait=false >/dev/null
  say "$name: rendezvous pod deleted at step $s0 (gone after $(( $(date +%s) - t0 )) s), then worker-1"
  went=$(steps_after "$name" $((s0 + 40)) 120) || went=none
  wait_for 60 bash -c "! kill -0 $follow 2>/dev/null"
  kill "$follow" 2>/dev/null
  grep -E 'supervisor: (signal|no store|told the new store|registered again|ddp: )' "$logf" | sed "s/^/[$name worker-1] /"
  check "$name: worker-1 departed (its supervisor's end)" grep -q 'ddp: Departed' "$logf"
  # Which way it went: the new rendezvous pod may already have been there for the SIGTERM.
  if grep -q 'no store to say it is leaving' "$logf"; then path="its SIGTERM found no store"; else path="its SIGTERM found the new store"; fi
  rm -f "$logf"
  wait_for "$JOB_TIMEOUT" bash -c "p=\$(kubectl -n $NS get ddpj $name -o jsonpath='{.status.phase}'); [ \"\$p\" = Succeeded ] || [ \"\$p\" = Failed ]"
  after=$(uids "$name" worker-0)
  recov=$(jget "$name" '{.status.recoveries}')
  stopped=$(kubectl -n "$NS" logs "$name-worker-0" --request-timeout=5s 2>/dev/null | grep -Ec 'stopped by signal|restarted rank 0')
  reads=$(for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" -o jsonpath='{.items[*].metadata.name}'); do
            kubectl -n "$NS" logs "$pod" --request-timeout=5s 2>/dev/null | grep -c 'resumed from checkpoint'; done | awk '{s += $1} END {print s + 0}')
  rdzv=$(rendezvous_log "$name")
  sum=$(STEPS=$((STEPS * 2)) job_checksum "$name")
  check "$name: training went on ($went s after the deletions)" [ "$went" != none ]
  check "$name: Succeeded ($(phase "$name"))" [ "$(phase "$name")" = Succeeded ]
  check "$name: round 0 ($(jget "$name" '{.status.round}'))" [ "$(jget "$name" '{.status.round}')" = 0 ]
  check "$name: worker-0 never replaced (${after})" [ "$before" = "$after" ]
  check "$name: worker-0's trainer never stopped or restarted ($stopped lines)" [ "$stopped" = 0 ]
  check "$name: no recovery charged ($r0 before, $recov at the end)" [ "$r0" = "$recov" ]
  check "$name: no checkpoint read ($reads)" [ "$reads" = 0 ]
  check "$name: both ranks ended at step $((STEPS * 2)) with one checksum (${sum:-none})" [ -n "$sum" ]
  timing "RESULTS | $name | the store's pod deleted, then worker-1 once it had gone ($path) | training on ${went} s later | recoveries charged $((recov - r0)) | round $(jget "$name" '{.status.round}') | checkpoint reads $reads | $(phase "$name") |"
  grep -E 'group authority: ' <<<"$rdzv" | head -n 12 | sed "s/^/[$name] /"
}
