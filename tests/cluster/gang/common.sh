# Helpers of tests/cluster/gang/volcano.sh and coscheduling.sh: a state directory, the source of a
# fetched snapshot, an offline Go build, processes started detached with pid files (stopped only
# through them), and the cluster's kubeconfig. Sourced.
#
# Environment: DDP_GANG_DIR (the state directory: sources, binaries, certificates, logs, pid
# files; default ${XDG_STATE_HOME:-~/.local/state}/ddp-gang), KUBECONFIG (one file: the cluster
# the schedulers join, with a user allowed everything they do: the kit's admin), GOCACHE.

GANG_DIR=${DDP_GANG_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/ddp-gang}

say() { printf '[%s] %s\n' "$GANG_NAME" "$*"; }
die() { printf '[%s] ERROR: %s\n' "$GANG_NAME" "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "$1 not found on PATH${2:+: $2}"; }

# The directories of scheduler GANG_NAME: src (the extracted source), bin, run (pid files), logs.
gang_dirs() {
  SRC=$GANG_DIR/$GANG_NAME/src BIN=$GANG_DIR/$GANG_NAME/bin RUN=$GANG_DIR/$GANG_NAME/run
  LOGS=$GANG_DIR/$GANG_NAME/logs ETC=$GANG_DIR/$GANG_NAME/etc
  mkdir -p "$BIN" "$RUN" "$LOGS" "$ETC"
}

# export_source SNAPSHOT REF: SNAPSHOT is a bare git directory (what a fetch of the repository
# gives) or a checkout; REF's tree goes to $SRC. Blobs a shallow snapshot lacks (large files:
# PDFs, images) are left out and named. A source tree without .git is used as it is.
export_source() {
  local snap=$1 ref=$2 g commit attrs
  [ -d "$snap" ] || die "$snap: no such directory (give the snapshot's git directory or a source tree)"
  if [ -d "$snap/.git" ]; then g=$snap/.git; else g=$snap; fi
  if ! git --git-dir="$g" rev-parse --git-dir >/dev/null 2>&1; then
    [ -f "$snap/vendor/modules.txt" ] || die "$snap is neither a git directory nor a source tree with vendor/"
    rm -rf "$SRC"; mkdir -p "$SRC"; cp -a "$snap/." "$SRC/"; echo "tree:$snap" >"$SRC/.gang-commit"; return 0
  fi
  commit=$(git --git-dir="$g" rev-parse --verify -q "$ref^{commit}") || die "$g has no $ref"
  [ "$(cat "$SRC/.gang-commit" 2>/dev/null)" = "$commit" ] && { say "source $ref ($commit) already in $SRC"; return 0; }
  rm -rf "$SRC"; mkdir -p "$SRC"
  attrs=$(mktemp)
  # Every blob of the tree, then the missing ones as export-ignore attributes.
  git --git-dir="$g" ls-tree -r "$commit" | awk -F'\t' '{split($1, a, " "); if (a[2] == "blob") print a[3] "\t" $2}' >"$attrs.tree"
  cut -f1 "$attrs.tree" | git --git-dir="$g" cat-file --batch-check | awk '$2 == "missing" {print $1}' >"$attrs.missing"
  awk -F'\t' 'NR == FNR {m[$1] = 1; next} ($1 in m) {print "/" $2 " export-ignore"}' "$attrs.missing" "$attrs.tree" >"$attrs"
  [ -s "$attrs" ] && { say "left out (the snapshot lacks their blobs):"; sed 's/^/    /; s/ export-ignore$//' "$attrs"; }
  git --git-dir="$g" -c core.attributesFile="$attrs" archive --worktree-attributes --format=tar "$commit" | tar -x -C "$SRC"
  rm -f "$attrs" "$attrs.tree" "$attrs.missing"
  [ -f "$SRC/vendor/modules.txt" ] || die "$ref of $g has no vendor/: the build would need the network"
  echo "$commit" >"$SRC/.gang-commit"
  say "extracted $ref ($commit) into $SRC"
}

# go_build LDFLAGS OUT PKG...: vendored, no network, no cgo, in $SRC.
go_build() {
  local ld=$1 out=$2; shift 2
  need go "install Debian's golang-go (1.19 builds both schedulers)"
  say "building $* with $(go version | cut -d' ' -f3) (vendored, GOPROXY=off)"
  (cd "$SRC" && GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local CGO_ENABLED=0 \
     nice -n 10 go build -trimpath -ldflags "$ld" -o "$out" "$@") || die "go build failed (see above)"
}

# proc_pid NAME: the pid in run/NAME.pid if it is alive and runs a binary of $BIN (a stale pid
# file never gets another process killed).
proc_pid() {
  local p c
  p=$(cat "$RUN/$1.pid" 2>/dev/null) || return 1
  [ -n "$p" ] && c=$(tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null) || return 1
  [[ $c == "$BIN/"* ]] && [ "$(awk '/^State:/ {print $2}' "/proc/$p/status" 2>/dev/null)" != Z ] && echo "$p"
}

# start NAME CMD...: detached in a session of its own; log logs/NAME.log, pid run/NAME.pid.
start() {
  local name=$1 p i; shift
  if p=$(proc_pid "$name"); then say "$name already running (pid $p)"; return 0; fi
  setsid "$@" >>"$LOGS/$name.log" 2>&1 </dev/null &
  echo $! >"$RUN/$name.pid"
  # Until the child has exec'd the binary, its command line is still this shell's (or setsid's):
  # proc_pid would call it stopped.
  for ((i = 0; i < 50; i++)); do
    [[ $(tr '\0' ' ' <"/proc/$!/cmdline" 2>/dev/null) == "$BIN/"* ]] && break
    kill -0 $! 2>/dev/null || break
    sleep 0.1
  done
  say "$name started (pid $!, log $LOGS/$name.log)"
}

# stop NAME: SIGTERM, up to 20 s, then SIGKILL.
stop() {
  local name=$1 p i
  if p=$(proc_pid "$name"); then
    kill "$p" 2>/dev/null || true
    for ((i = 0; i < 40; i++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -0 "$p" 2>/dev/null && { say "$name (pid $p) still running after 20 s: SIGKILL"; kill -9 "$p" 2>/dev/null; }
    say "$name stopped"
  fi
  rm -f "$RUN/$name.pid"
}

# alive NAME SECONDS: NAME is still running after SECONDS (a process that dies at once, e.g. on
# a bad flag or a missing CRD, is reported with the end of its log).
alive() {
  local i
  for ((i = 0; i < $2; i++)); do
    proc_pid "$1" >/dev/null || { tail -n 20 "$LOGS/$1.log" >&2; die "$1 exited (log $LOGS/$1.log)"; }
    sleep 1
  done
}

port_free() {
  ! ss -Hltn "sport = :$1" 2>/dev/null | grep -q . || die "port $1 (for $2) is in use: set ${3} to another port"
}

# The cluster: KUBECONFIG must name one file (the processes get it as --kubeconfig).
need_cluster() {
  need kubectl
  [ -n "${KUBECONFIG:-}" ] && [ -f "$KUBECONFIG" ] || die "set KUBECONFIG to the cluster's kubeconfig file"
  kubectl get --raw /readyz >/dev/null 2>&1 || die "the cluster in $KUBECONFIG does not answer"
}

# wait_until SECONDS CMD...: poll CMD every second.
wait_until() {
  local n=$1 i; shift
  for ((i = 0; i < n; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 1; done
  return 1
}

status_procs() {
  local n p
  for n in "$@"; do
    if p=$(proc_pid "$n"); then echo "  $n: running (pid $p)"; else echo "  $n: stopped"; fi
  done
  echo "  built from: $(cat "$BIN/.gang-commit" 2>/dev/null || echo 'not built')"
}
