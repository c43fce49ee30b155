# The gang scenarios of tests/cluster/run.sh (gang-volcano, gang-coscheduling): the operator,
# installed with the gang scheduler, against the real scheduler running in the cluster
# (tests/cluster/gang/volcano.sh or coscheduling.sh start them on a test cluster). Each runs only
# when its scheduler places a probe pod of a probe PodGroup; otherwise it is skipped, with the
# reason. Sourced after lib.sh; uses ROOT, JOB_TIMEOUT and chart_renderer.
#
# The cluster is sized so that exactly 2 worker pods fit: each schedulable node gets a ballast
# pod (bound by nodeName, a stand-in for other tenants' work) leaving GANG_ROOM free, between one
# worker plus a rendezvous pod and two workers; removing the ballast makes room for 3 or more.
#   a  a job of 3 stays wholly Pending (no pod bound, condition Queued with the reason) while a
#      job of 2 runs beside it and after it ended
#   b  the ballast removed: the job of 3 starts whole (time to admission: room made -> every
#      pod bound)
#   c  recovery Restart, a worker deleted mid-run: the new round is admitted; recovery InPlace
#      with a spare: the gang (workers + rendezvous pod) is admitted, never the spare in a
#      worker's place, and a deleted worker is replaced in round 0
#   d  spec.elastic 2..3 InPlace, `kubectl scale` to 3 mid-run: minMember follows (3 -> 4) and
#      the grown group is admitted (world size 3)
#
# Environment: E2E_GANG_WORKER_CPU (millicores, 700), E2E_GANG_STEPS (the jobs' steps, 1500),
# E2E_COSCHEDULING_NAME (the plugin's profile, scheduler-plugins-scheduler).

GANG_W=${E2E_GANG_WORKER_CPU:-700}
GANG_STEPS=${E2E_GANG_STEPS:-1500}
GANG_ROOM=$((GANG_W + 300))
GANG_IMAGE=ddp-worker-cpu:0.1.0
GANG_NAMESPACES=()

gang_skip() { scenario_skip "$@"; }

# gang_pod_group SCHED NAME MIN: a PodGroup manifest of SCHED's kind.
gang_pod_group() {
  local api=scheduling.x-k8s.io/v1alpha1
  [ "$1" = volcano ] && api=scheduling.volcano.sh/v1beta1
  printf 'apiVersion: %s\nkind: PodGroup\nmetadata: {name: %s}\nspec: {minMember: %s}\n' "$api" "$2" "$3"
}
pg_resource() { [ "$1" = volcano ] && echo podgroups.scheduling.volcano.sh || echo podgroups.scheduling.x-k8s.io; }

# gang_probe SCHED SCHEDULER_NAME: a PodGroup of 1 and a pod in it are placed by the scheduler,
# and the group gets a phase (Volcano's scheduler, the coscheduling plugin's controller). Prints
# why not.
gang_probe() {
  local sched=$1 sname=$2 key i node phase
  kubectl get crd "$(pg_resource "$sched")" >/dev/null 2>&1 \
    || { echo "the CRD $(pg_resource "$sched") is not installed"; return 1; }
  gang_pod_group "$sched" gang-probe 1 | kubectl -n "$NS" apply -f - >/dev/null \
    || { echo "cannot create a PodGroup"; return 1; }
  if [ "$sched" = volcano ]; then key="annotations: {scheduling.k8s.io/group-name: gang-probe}"
  else key="labels: {scheduling.x-k8s.io/pod-group: gang-probe}"; fi
  kubectl -n "$NS" apply -f - >/dev/null <<EOF || { echo "cannot create the probe pod"; return 1; }
apiVersion: v1
kind: Pod
metadata: {name: gang-probe, $key}
spec:
  schedulerName: $sname
  terminationGracePeriodSeconds: 0
  containers: [{name: probe, image: $GANG_IMAGE, command: [sleep, "600"], resources: {requests: {cpu: 10m, memory: 8Mi}}}]
EOF
  for ((i = 0; i < 30; i++)); do
    node=$(kubectl -n "$NS" get pod gang-probe -o jsonpath='{.spec.nodeName}' 2>/dev/null)
    phase=$(kubectl -n "$NS" get "$(pg_resource "$sched")" gang-probe -o jsonpath='{.status.phase}' 2>/dev/null)
    [ -n "$node" ] && [ -n "$phase" ] && break
    sleep 1
  done
  kubectl -n "$NS" delete pod gang-probe --wait=false >/dev/null 2>&1
  kubectl -n "$NS" delete "$(pg_resource "$sched")" gang-probe --wait=false >/dev/null 2>&1
  [ -n "$node" ] || { echo "no pod with schedulerName $sname was bound within 30 s"; return 1; }
  [ -n "$phase" ] || { echo "the probe PodGroup got no status.phase within 30 s (is its controller running?)"; return 1; }
}

# gang_install NAME: the chart with gangScheduler.name NAME ("" for none), the operator restarted.
gang_install() { chart_reinstall --set "gangScheduler.name=$1"; }

# ---- sizing: millicores free on each schedulable node, and ballast pods.
to_milli() { awk '{v = $1; if (v ~ /m$/) {sub(/m$/, "", v); print int(v)} else print int(v * 1000)}' <<<"$1"; }

# free_cpu: "node millicores" for each Ready node without a NoSchedule taint: its allocatable
# less the requests of its pods that are not over.
free_cpu() {
  local node unsched ready taints alloc used r
  while IFS='|' read -r node unsched ready taints; do
    [ "$ready" = True ] && [ "$unsched" != true ] && [[ $taints != *NoSchedule* ]] || continue
    alloc=$(to_milli "$(kubectl get node "$node" -o jsonpath='{.status.allocatable.cpu}')")
    used=0
    while read -r r; do [ -n "$r" ] && used=$((used + $(to_milli "$r"))); done < <(
      kubectl get pods -A --field-selector "spec.nodeName=$node,status.phase!=Succeeded,status.phase!=Failed" \
        -o jsonpath='{range .items[*]}{range .spec.containers[*]}{.resources.requests.cpu}{"\n"}{end}{end}')
    echo "$node $((alloc - used))"
  done < <(kubectl get nodes -o jsonpath='{range .items[*]}{.metadata.name}|{.spec.unschedulable}|{.status.conditions[?(@.type=="Ready")].status}|{.spec.taints[*].effect}{"\n"}{end}')
}

# ballast_on: every schedulable node left with GANG_ROOM millicores free (the first two) or none
# (any others), so exactly 2 workers of GANG_W fit. Fails when a node has too little.
ballast_on() {
  local node free n=0 keep
  while read -r node free; do
    keep=$(( n < 2 ? GANG_ROOM : 0 )); n=$((n + 1))
    [ "$free" -ge "$keep" ] || { say "node $node has ${free}m free, less than ${keep}m"; return 1; }
    [ "$free" -gt "$keep" ] || continue
    kubectl -n "$NS" apply -f - >/dev/null <<EOF || return 1
apiVersion: v1
kind: Pod
metadata: {name: ballast-$node, labels: {ddp-e2e: ballast}}
spec:
  nodeName: $node
  terminationGracePeriodSeconds: 0
  containers: [{name: ballast, image: $GANG_IMAGE, command: [sleep, "3600"], resources: {requests: {cpu: $((free - keep))m, memory: 8Mi}}}]
EOF
  done < <(free_cpu | sort)
  [ "$n" -ge 2 ] || { say "fewer than 2 schedulable nodes"; return 1; }
  wait_gone_or 60 ballast_running
}
ballast_running() {
  [ -z "$(kubectl -n "$NS" get pods -l ddp-e2e=ballast -o jsonpath='{range .items[?(@.status.phase!="Running")]}{.metadata.name}{end}')" ]
}
ballast_off() {
  kubectl -n "$NS" delete pods -l ddp-e2e=ballast --wait=true --timeout=60s >/dev/null 2>&1
}

# room: how many workers of GANG_W fit now (a rendezvous pod of 100m beside one of them).
room() {
  local node free total=0
  while read -r node free; do total=$((total + free / GANG_W)); done < <(free_cpu)
  echo "$total"
}

# gang_job NAME REPLICAS RECOVERY [SPARES [MAX]]: a CPU MLP job of GANG_STEPS steps.
gang_job() {
  local name=$1 replicas=$2 recovery=$3 spares=${4:-0} max=${5:-}
  {
    printf 'apiVersion: ddp.dev/v1alpha1\nkind: DDPJob\nmetadata: {name: %s}\nspec:\n  replicas: %s\n' "$name" "$replicas"
    [ -z "$max" ] || printf '  elastic: {minReplicas: %s, maxReplicas: %s}\n' "$replicas" "$max"
    printf '  failurePolicy: {recovery: %s, maxRestarts: 5, spares: %s}\n' "$recovery" "$spares"
    printf '  runPolicy: {activeDeadlineSeconds: %s}\n' "$JOB_TIMEOUT"
    cat <<EOF
  template:
    spec:
      containers:
        - name: worker
          image: $GANG_IMAGE
          command: [ddp-worker]
          args: [--model=mlp, --dataset=synthetic, --steps=$GANG_STEPS, --batch-size=32, --log-every=1000, --threads=1]
          env: [{name: OMP_NUM_THREADS, value: "1"}]
          resources: {requests: {cpu: ${GANG_W}m, memory: 256Mi}, limits: {memory: 1Gi}}
EOF
  } | kubectl -n "$NS" apply -f - >/dev/null
}

# bound NAME: "pod node" of each of the job's pods with a node.
bound() {
  kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" \
    -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name} {.spec.nodeName}{"\n"}{end}' 2>/dev/null
}
count_running() {
  kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1${2:+,$2}" --field-selector=status.phase=Running \
    -o name 2>/dev/null | grep -c .
}
cond() { jget "$1" "{range .status.conditions[?(@.type==\"$2\")]}{.status}/{.reason}: {.message}{end}"; }
min_member() { kubectl -n "$NS" get "$(pg_resource "$GANG_SCHED")" "$1" -o jsonpath='{.spec.minMember}' 2>/dev/null; }

# wait_job NAME SECONDS [HOOK]: until the job ends or SECONDS pass; HOOK NAME STEP each second.
wait_job() {
  local name=$1 t0 p
  t0=$(date +%s)
  while :; do
    p=$(phase "$name")
    [ "$p" = Succeeded ] || [ "$p" = Failed ] && return 0
    [ $(( $(date +%s) - t0 )) -lt "$2" ] || return 1
    [ -z "${3:-}" ] || "$3" "$name" "$(job_step "$name")"
    sleep 1
  done
}

# ---- a, b: the job of 3 held whole while the job of 2 runs; then started whole.
gang_hold_and_admit() {
  local s=$GANG_SCHED held_cond="" t0 tr t_all ended=0 i binds c
  ballast_on || { check "gang-$s: ballast leaves room for exactly 2 workers" false; return; }
  check "gang-$s a: room for exactly 2 workers of ${GANG_W}m ($(room))" [ "$(room)" = 2 ]
  gang_job big 3 Restart
  gang_job fits 2 Restart
  t0=$(date +%s) binds=""
  while [ $(( $(date +%s) - t0 )) -lt "$JOB_TIMEOUT" ]; do
    binds+=$(bound big)
    c=$(cond big Queued); [ "${c%%/*}" = True ] && held_cond=$c
    if [ "$ended" = 0 ] && [ "$(phase fits)" = Succeeded ]; then ended=$(date +%s); fi
    # 15 s after the job of 2 ended (room for 2 again), the job of 3 must still hold nothing.
    [ "$ended" != 0 ] && [ $(( $(date +%s) - ended )) -ge 15 ] && break
    sleep 1
  done
  check "gang-$s a: the job of 2 ran beside the job of 3 and Succeeded ($(phase fits))" [ "$(phase fits)" = Succeeded ]
  check "gang-$s a: no pod of the job of 3 was bound (${binds:-none})" [ -z "$binds" ]
  check "gang-$s a: the job of 3 is Pending ($(phase big))" [ "$(phase big)" = Pending ]
  check "gang-$s a: its condition says why (Queued=${held_cond:-absent})" \
    grep -q '^True/WaitingForPodGroup: round 0: .*minMember 3' <<<"$held_cond"
  # ...in the scheduler's own words, about one of the job's pods.
  check "gang-$s a: the condition quotes the scheduler about a pod of the job" \
    grep -q '; pod big-worker-[0-2]: ..' <<<"$held_cond"
  say "gang-$s a: $(cond big Queued)"
  # b: room is made.
  ballast_off; tr=$(date +%s)
  t_all=""
  for ((i = 0; i < 180; i++)); do
    [ "$(bound big | grep -c .)" = 3 ] && { t_all=$(date +%s); break; }
    sleep 1
  done
  check "gang-$s b: the job of 3 bound whole once room was made" [ -n "$t_all" ]
  [ -z "$t_all" ] || timing "gang-$s b: room made -> the 3 pods bound in $((t_all - tr)) s"
  wait_job big "$JOB_TIMEOUT"
  check "gang-$s b: the job of 3 Succeeded ($(phase big))" [ "$(phase big)" = Succeeded ]
  check "gang-$s b: Queued turned False/Admitted ($(cond big Queued))" grep -q '^False/Admitted' <<<"$(cond big Queued)"
  check "gang-$s b: the finished job's PodGroup was deleted" \
    wait_gone_or 30 bash -c "! kubectl -n $NS get $(pg_resource "$s") big >/dev/null 2>&1"
}

# ---- c: a new round under Restart, an in-place replacement (and a spare) under InPlace.
C_STATE=0 C_T=0 C_ADMIT="" C_PARTIAL=""
gang_restart_hook() {
  local name=$1 step=$2 made nb
  # A gang scheduler binds no member of the new round before the round's pods all exist.
  if [ "$C_STATE" = 1 ]; then
    made=$(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name,ddp.dev/round=1" -o name 2>/dev/null | grep -c .)
    nb=$(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name,ddp.dev/round=1" \
      -o jsonpath='{range .items[?(@.spec.nodeName)]}{.metadata.name}{" "}{end}' 2>/dev/null)
    [ -n "$nb" ] && [ "$made" -lt 2 ] && C_PARTIAL+=" [$nb bound with $made of 2 pods of round 1 created, $(( $(date +%s) - C_T )) s after the deletion]"
  fi
  case $C_STATE in
    0) [ "$step" -ge $((GANG_STEPS / 4)) ] || return 0
       say "deleting $name-worker-1 at step $step"
       kubectl -n "$NS" delete pod "$name-worker-1" --wait=false >/dev/null; C_STATE=1 C_T=$(date +%s) ;;
    1) [ "$(jget "$name" '{.status.round}')" -ge 1 ] 2>/dev/null && [ "$(count_running "$name" ddp.dev/round=1)" = 2 ] || return 0
       C_ADMIT=$(( $(date +%s) - C_T )); C_STATE=2 ;;
  esac
}
C_UID="" C_STEP=0
gang_inplace_hook() {
  local name=$1 step=$2 uid
  case $C_STATE in
    0) [ "$step" -ge $((GANG_STEPS / 4)) ] || return 0
       C_UID=$(uid_of "$name" "$name-worker-1") C_STEP=$step
       say "deleting $name-worker-1 at step $step"
       kubectl -n "$NS" delete pod "$name-worker-1" --wait=false >/dev/null; C_STATE=1 C_T=$(date +%s) ;;
    1) # worker-1 gone, replaced (by a new worker-1 or the spare) and training again at 2 ranks
       uid=$(kubectl -n "$NS" get pod "$name-worker-1" -o jsonpath='{.metadata.uid}' 2>/dev/null)
       [ "$uid" != "$C_UID" ] && [ "$(jget "$name" '{.status.readyReplicas}')" = 2 ] \
         && [ "$step" -gt $((C_STEP + 50)) ] || return 0
       C_ADMIT=$(( $(date +%s) - C_T )); C_STATE=2 ;;
  esac
}

# bound_early NAME ROUND: the pods of ROUND bound (PodScheduled True) in a second before the
# round's last pod was created, as "pod bound-at < last-created-at"; nothing when none was. A
# sampled check misses a pod bound alone within the half second before its sibling came.
bound_early() {
  kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1,ddp.dev/round=$2" -o jsonpath='{range .items[*]}{.metadata.name} {.metadata.creationTimestamp} {.status.conditions[?(@.type=="PodScheduled")].status} {.status.conditions[?(@.type=="PodScheduled")].lastTransitionTime}{"\n"}{end}' 2>/dev/null \
    | awk '{created[$1] = $2; if ($3 == "True") bound[$1] = $4; if ($2 > last) last = $2}
           END {for (p in bound) if (bound[p] < last) print p " " bound[p] " < " last}'
}

gang_rounds() {
  local s=$GANG_SCHED name roles early
  ballast_on || { check "gang-$s c: ballast" false; return; }
  C_STATE=0 C_ADMIT="" C_PARTIAL=""
  gang_job restart 2 Restart
  wait_job restart "$JOB_TIMEOUT" gang_restart_hook
  check "gang-$s c: Restart: a worker deleted mid-run started a new round ($(jget restart '{.status.round}'))" [ "$C_STATE" -ge 1 ]
  check "gang-$s c: Restart: the new round was admitted whole" [ "$C_STATE" = 2 ]
  check "gang-$s c: Restart: no pod of the new round bound before the round's pods all existed${C_PARTIAL:+:$C_PARTIAL}" [ -z "$C_PARTIAL" ]
  early=$(bound_early restart 1)
  check "gang-$s c: Restart: no pod of round 1 bound in a second before its last pod was created${early:+: $early}" [ -z "$early" ]
  [ -z "$C_ADMIT" ] || timing "gang-$s c: Restart: worker deleted -> new round's 2 pods Running in $C_ADMIT s"
  check "gang-$s c: Restart: Succeeded ($(phase restart))" [ "$(phase restart)" = Succeeded ]
  # InPlace with a spare: room for the 2 workers and the rendezvous pod, not for the spare.
  C_STATE=0 C_ADMIT=""
  name=inplace
  gang_job "$name" 2 InPlace 1
  wait_gone_or 180 bash -c "[ \"\$(kubectl -n $NS get pods -l ddp.dev/job-name=$name,ddp.dev/role=worker --field-selector=status.phase=Running -o name | grep -c .)\" = 2 ]"
  roles=$(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" \
            -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase}{" "}{end}')
  check "gang-$s c: InPlace: both workers and the rendezvous pod admitted, not the spare in a worker's place ($roles)" \
    bash -c "grep -q '$name-worker-0=Running' <<<'$roles' && grep -q '$name-worker-1=Running' <<<'$roles' && grep -q '$name-rendezvous=Running' <<<'$roles'"
  say "gang-$s c: InPlace PodGroup minMember $(min_member "$name")"
  check "gang-$s c: InPlace: minMember is the workers and the rendezvous pod (3)" [ "$(min_member "$name")" = 3 ]
  wait_job "$name" "$JOB_TIMEOUT" gang_inplace_hook
  check "gang-$s c: InPlace: worker-1 deleted mid-run, replaced, and training again at 2 ranks" [ "$C_STATE" = 2 ]
  [ -z "$C_ADMIT" ] || timing "gang-$s c: InPlace: worker deleted -> 2 ranks ready and 50 steps further in $C_ADMIT s"
  say "gang-$s c: InPlace pods: $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$name" -o jsonpath='{range .items[*]}{.metadata.name}={.status.phase} {end}')"
  check "gang-$s c: InPlace: Succeeded in round 0 ($(phase "$name"), round $(jget "$name" '{.status.round}'))" \
    [ "$(phase "$name")/$(jget "$name" '{.status.round}')" = Succeeded/0 ]
  ballast_off
}

# ---- d: a resize in place.
D_STATE=0 D_T=0 D_MIN="" D_BOUND=""
gang_resize_hook() {
  local name=$1 step=$2 m
  case $D_STATE in
    0) [ "$step" -ge $((GANG_STEPS / 4)) ] || return 0
       say "kubectl scale ddpj $name --replicas=3 at step $step"
       kubectl -n "$NS" scale ddpj "$name" --replicas=3 >/dev/null && D_STATE=1 D_T=$(date +%s) ;;
    1|2) m=$(min_member "$name"); [ -n "$m" ] && D_MIN+=" $m"
       [ "$D_STATE" = 1 ] && [ "$(bound "$name" | grep -c "$name-worker-2 ")" = 1 ] && D_BOUND=$(( $(date +%s) - D_T )) D_STATE=2
       [ "$D_STATE" = 2 ] && [ "$(jget "$name" '{.status.worldSize}')" = 3 ] && D_STATE=3 && timing "gang-$GANG_SCHED d: scale -> world size 3 in $(( $(date +%s) - D_T )) s" ;;
  esac
}

gang_resize() {
  local s=$GANG_SCHED name=grow sum
  D_STATE=0 D_MIN="" D_BOUND=""
  gang_job "$name" 2 InPlace 0 3
  wait_job "$name" "$JOB_TIMEOUT" gang_resize_hook
  check "gang-$s d: scaled to 3 mid-run" [ "$D_STATE" -ge 1 ]
  check "gang-$s d: minMember followed the resize to 4 (seen:$(tr ' ' '\n' <<<"$D_MIN" | uniq | xargs))" \
    grep -qw 4 <<<"$D_MIN"
  check "gang-$s d: worker-2 bound" [ "$D_STATE" -ge 2 ]
  [ -z "$D_BOUND" ] || timing "gang-$s d: scale -> worker-2 bound in $D_BOUND s"
  check "gang-$s d: status.worldSize 3 after worker-2 was bound" [ "$D_STATE" = 3 ]
  sum=$(STEPS=$GANG_STEPS job_checksum "$name" 3)
  check "gang-$s d: the 3 ranks ended at step $GANG_STEPS with one checksum (${sum:-none})" [ -n "$sum" ]
  check "gang-$s d: Succeeded in round 0 ($(phase "$name"), round $(jget "$name" '{.status.round}'))" \
    [ "$(phase "$name")/$(jget "$name" '{.status.round}')" = Succeeded/0 ]
}

# scenario_gang SCHED: volcano or coscheduling.
scenario_gang() {
  local GANG_SCHED=$1 sname why t0 NS
  sname=volcano
  [ "$1" = volcano ] || sname=${E2E_COSCHEDULING_NAME:-scheduler-plugins-scheduler}
  if [ "${E2E_SKIP_INSTALL:-0}" = 1 ]; then
    gang_skip "gang-$1: E2E_SKIP_INSTALL=1, and these scenarios install the chart with --set gangScheduler.name=$sname"
    return
  fi
  NS=ddp-gang-$1-$(date +%s); GANG_NAMESPACES+=("$NS")
  kubectl create namespace "$NS" >/dev/null || { check "gang-$1: namespace $NS" false; return; }
  # Volcano's webhooks (tests/cluster/gang/volcano.sh) admit only namespaces that opt in.
  kubectl label namespace "$NS" ddp.dev/volcano-admission=enabled >/dev/null
  if ! why=$(gang_probe "$1" "$sname"); then
    gang_skip "gang-$1: $why: start it with tests/cluster/gang/$1.sh up (docs/$1.md)"
    kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
    return
  fi
  t0=$(date +%s)
  say "gang-$1: the scheduler $sname places pods; installing the operator with gangScheduler.name=$sname"
  gang_install "$sname" || { check "gang-$1: the operator installed with gangScheduler.name=$sname" false; return; }
  gang_hold_and_admit
  gang_rounds
  gang_resize
  kubectl -n "$NS" get events --sort-by=.lastTimestamp 2>/dev/null | grep -E 'DDPJob|PodGroup' | tail -n 40
  [ "${E2E_KEEP:-0}" = 1 ] || kubectl delete namespace "$NS" --wait=false >/dev/null 2>&1
  gang_install "" || say "reinstalling the operator without a gang scheduler failed"
  say "gang-$1: done in $(( $(date +%s) - t0 )) s"
}
