# Helpers of tests/cluster/run.sh: output, checks, the job manifest, polling a job with a
# deadline, and what is read back (phase, step, checksums, pod start latency, heal stalls).
# Sourced; uses ROOT, NS, STEPS, JOB_TIMEOUT and REF from run.sh.

FAILED=() PASSED=0 TIMINGS=() SKIPS=()
say() { echo "[e2e $(date +%H:%M:%S)] $*"; }
skip() { echo "SKIPPED: $*"; exit 77; }
fail_hard() { echo "FAILED: $*"; report; exit 1; }
# check NAME CMD...: runs CMD; records NAME as passed or failed.
check() {
  local name=$1; shift
  if "$@"; then PASSED=$((PASSED + 1)); say "ok   $name"; else FAILED+=("$name"); say "FAIL $name"; fi
}
# scenario_skip REASON: a scenario that cannot run here (listed at the end; all skipped: exit 77).
scenario_skip() { SKIPS+=("$*"); say "SKIPPED: $*"; }
timing() { TIMINGS+=("$*"); say "time $*"; }
report() {
  echo "---- e2e-cluster: $PASSED passed, ${#FAILED[@]} failed"
  for f in "${FAILED[@]}"; do echo "FAILED: $f"; done
  for t in "${TIMINGS[@]}"; do echo "timing: $t"; done
  if [ -n "${E2E_REPORT:-}" ]; then
    { echo "e2e-cluster $(date -u +%FT%TZ): $PASSED passed, ${#FAILED[@]} failed"
      for f in "${FAILED[@]}"; do echo "  FAILED: $f"; done
      for t in "${TIMINGS[@]}"; do echo "  $t"; done; } >> "$E2E_REPORT"
  fi
  [ ${#FAILED[@]} -eq 0 ]
}

# chart_renderer: helm or helmlite (both render with `template NAME CHART -n NS`).
chart_renderer() {
  if command -v helm >/dev/null 2>&1; then echo helm
  elif command -v helmlite >/dev/null 2>&1; then echo helmlite
  else echo "neither helm nor helmlite on PATH: cannot install the chart"; return 1; fi
}

wait_gone_or() { local n=$1 i; shift; for ((i = 0; i < n; i++)); do "$@" && return 0; sleep 1; done; return 1; }

# chart_reinstall [--set KEY=VALUE ...]: the chart's render with E2E_CHART_SET (run.sh's
# CHART_SET) and these values applied, the operator restarted (it reads its flags at start) and
# its old pod gone (its CPU request would count in sizing). Scenarios that change a value call it
# again without it afterwards.
chart_reinstall() {
  local render
  render=$(chart_renderer) || return 1
  $render template ddp "$ROOT/charts/ddp-operator" -n ddp-system "${CHART_SET[@]}" "$@" \
    | kubectl apply -n ddp-system -f - >/dev/null || return 1
  kubectl -n ddp-system rollout restart deployment/ddp-ddp-operator >/dev/null 2>&1
  kubectl -n ddp-system rollout status deployment/ddp-ddp-operator --timeout=180s >/dev/null || return 1
  # shellcheck disable=SC2016  # expanded by that bash
  wait_gone_or 120 bash -c '[ "$(kubectl -n ddp-system get pods -l app.kubernetes.io/name=ddp-operator -o name | grep -c .)" = 1 ]'
}

# Commands run.sh's EXIT trap runs, the last added first (a background process a scenario started
# and must not outlive the suite, e.g. tests/cluster/netpol.py's rules). A scenario that ends
# normally runs its own and removes it with exit_cleanup_done.
EXIT_CLEANUPS=()
exit_cleanup_add() { EXIT_CLEANUPS+=("$1"); }
exit_cleanup_done() {
  local i
  for i in "${!EXIT_CLEANUPS[@]}"; do [ "${EXIT_CLEANUPS[$i]}" != "$1" ] || unset 'EXIT_CLEANUPS[i]'; done
}
exit_cleanups_run() {
  local i keys=("${!EXIT_CLEANUPS[@]}")
  for ((i = ${#keys[@]} - 1; i >= 0; i--)); do eval "${EXIT_CLEANUPS[${keys[i]}]}"; done
}

# manifest NAME RECOVERY FAULT_STEP|none: examples/mingpt-kind.yaml, renamed, STEPS steps,
# the scripted kill at FAULT_STEP (or none), under RECOVERY (InPlace or Restart); the sed
# expressions in EXTRA_SED (e.g. -e 's/.../.../') after those.
EXTRA_SED=()
manifest() {
  local name=$1 recovery=$2 fault=$3
  local -a s=(-e "s/^  name: mingpt-kind\$/  name: $name/" -e "s/--steps=6000/--steps=$STEPS/"
              -e "s/activeDeadlineSeconds: 3600/activeDeadlineSeconds: $JOB_TIMEOUT/")
  [ "$recovery" = InPlace ] || s+=(-e '/recovery: InPlace/d')
  if [ "$fault" = none ]; then s+=(-e '/- name: DDP_FAULT/,/value:/d')
  else s+=(-e "s/\"1:1500@0:kill\"/\"1:$fault@0:kill\"/"); fi
  [ -z "${E2E_WORKER_CPU:-}" ] || s+=(-e "s/cpu: 500m .*/cpu: $E2E_WORKER_CPU/")
  sed "${s[@]}" "${EXTRA_SED[@]}" "$ROOT/examples/mingpt-kind.yaml"
}

jget() { kubectl -n "$NS" get ddpj "$1" -o jsonpath="$2" 2>/dev/null; }
phase() { jget "$1" '{.status.phase}'; }

# job_step NAME: the highest ddp_worker_steps_total on the job's running pods' /metrics (through
# the API server's pod proxy: no port-forward), 0 when none answers. Each read is bounded at 3 s:
# under an enforced NetworkPolicy the proxy cannot reach the pods of another node (the API
# server is not in the job's namespace), and an unbounded read stalled the polling loop, and with
# it the scenario's hook, until the job had ended.
job_step() {
  local pod best=0 v
  for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" --field-selector=status.phase=Running \
                 -o jsonpath='{.items[*].metadata.name}' 2>/dev/null); do
    v=$(kubectl get --raw "/api/v1/namespaces/$NS/pods/$pod:9400/proxy/metrics" --request-timeout=3s 2>/dev/null \
          | awk '/^ddp_worker_steps_total[{ ]/ {if ($NF > m) m = $NF} END {print m + 0}')
    [ "${v%.*}" -gt "$best" ] 2>/dev/null && best=${v%.*}
  done
  echo "$best"
}

# uid_of NAME POD: the uid of pod POD (empty when absent or being deleted).
uid_of() {
  kubectl -n "$NS" get pod "$2" -o jsonpath='{.metadata.deletionTimestamp}|{.metadata.uid}|{.status.phase}' 2>/dev/null \
    | awk -F'|' '$1 == "" && $3 == "Running" {print $2}'
}

# record_pods NAME: pod start latency (creation to the worker container's start) of each pod
# of the job seen running, once per pod uid, into STARTS.
declare -A STARTED=()
STARTS=()
record_pods() {
  local uid pod created started
  while read -r uid pod created started; do
    [ -n "$started" ] && [ -z "${STARTED[$uid]:-}" ] || continue
    STARTED[$uid]=1
    STARTS+=("$pod $(( $(date -d "$started" +%s) - $(date -d "$created" +%s) ))")
  done < <(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" -o jsonpath='{range .items[*]}{.metadata.uid} {.metadata.name} {.metadata.creationTimestamp} {.status.containerStatuses[0].state.running.startedAt}{"\n"}{end}' 2>/dev/null)
}

# run_job NAME RECOVERY FAULT [HOOK]: applies the job and polls it once a second until it is
# Succeeded or Failed or JOB_TIMEOUT passed; HOOK NAME STEP runs at each poll.
run_job() {
  local name=$1 hook=${4:-} t0 now step p
  say "job $name: recovery $2, fault ${3}"
  manifest "$name" "$2" "$3" | kubectl -n "$NS" apply -f - >/dev/null || fail_hard "kubectl apply of job $name failed"
  t0=$(date +%s)
  while :; do
    now=$(date +%s)
    p=$(phase "$name")
    record_pods "$name"
    [ "$p" = Succeeded ] || [ "$p" = Failed ] && break
    if [ $((now - t0)) -ge "$JOB_TIMEOUT" ]; then say "job $name: still $p after $JOB_TIMEOUT s"; break; fi
    if [ -n "$hook" ]; then step=$(job_step "$name"); "$hook" "$name" "$step"; fi
    sleep 1
  done
  timing "$name: $p after $(( $(date +%s) - t0 )) s"
}

# job_checksum NAME [WORLD]: the param_checksum every rank logged at step STEPS, when the job's
# WORLD (2) worker pods logged one each and all agree; empty otherwise (the lines found are printed).
job_checksum() {
  local pod sums="" lines=0 line world=${2:-2}
  for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" -o jsonpath='{.items[*].metadata.name}'); do
    line=$(kubectl -n "$NS" logs "$pod" 2>/dev/null | grep -Eo "summary rank=[0-9]+ world_size=$world step=$STEPS .*param_checksum=[0-9a-f]+" | tail -n 1)
    [ -n "$line" ] || continue
    lines=$((lines + 1))
    sums+="${line##*param_checksum=}"$'\n'
    echo "$pod: ${line%% tokens_per_s*} ... param_checksum=${line##*param_checksum=}" >&2
  done
  [ "$lines" -eq "$world" ] && [ "$(sort -u <<<"${sums%$'\n'}" | wc -l)" -eq 1 ] && echo "${sums%%$'\n'*}"
}

# stalls NAME: each "recovered in Xs" a trainer of the job logged (the survivors' stall, from the
# failure to the next committed step), as "pod Xs".
stalls() {
  local pod
  for pod in $(kubectl -n "$NS" get pods -l "ddp.dev/job-name=$1" -o jsonpath='{.items[*].metadata.name}'); do
    kubectl -n "$NS" logs "$pod" 2>/dev/null | grep -Eo 'rank [0-9]+: recovered in [0-9.]+s' | sed "s/^/$pod /"
  done
}
