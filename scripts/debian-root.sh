#!/usr/bin/env bash
# A Debian release of our choice as a chroot, made from the archive this machine's apt already
# uses: the second LibTorch of `make test` (Debian 12's 1.13 or Debian 13's 2.6, whichever the
# host is not) and the CUDA compile check build in one. Made once, kept between runs.
#
#   debian-root.sh ensure NAME [PACKAGES...]   make the root if missing; install PACKAGES in it
#   debian-root.sh run NAME CMD...             run CMD in the root, this tree mounted at /src
#   debian-root.sh path NAME                   print where the root lives
#
# NAME is a Debian suite (trixie, bookworm), or SUITE-WORD for a second root of that suite
# whose packages would conflict with the first's (trixie-cuda: the CUDA LibTorch).
# Environment:
#   DDP_ROOTS        where roots live (default /var/cache/ddp-roots); each is $DDP_ROOTS/NAME
#   DEBIAN_MIRROR    the archive (default: the one this machine's apt sources name)
# A root is complete once it holds .ddp-root-complete; an interrupted debootstrap leaves a
# NAME.partial that the next run removes and makes again. Deleting the folder is the reset.
set -euo pipefail

ROOTS=${DDP_ROOTS:-/var/cache/ddp-roots}
TREE=$(cd "$(dirname "$0")/.." && pwd)

say() { printf '[debian-root] %s\n' "$*" >&2; }
die() { printf '[debian-root] ERROR: %s\n' "$*" >&2; exit 1; }
as_root() { if [ "$(id -u)" -eq 0 ]; then "$@"; else sudo "$@"; fi; }

# The archive this machine's apt uses for its own release (deb822 or one-line sources): the
# other release is served by the same archive.
apt_uri() {
  { awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null
    awk '$1 == "deb" {i = 2; if ($2 ~ /^\[/) { while ($i !~ /\]$/) i++; i++ } print $i; exit}' \
      /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null; } |
    grep -v -e security -e '^$' | head -n 1 || true
}

root_of() { echo "$ROOTS/$1"; }

# run_in ROOT CMD...: CMD inside ROOT with /proc, /dev, /sys and this tree (at /src) mounted in
# a mount namespace of its own, so every mount ends with the command, however it ends.
run_in() {
  local r=$1; shift
  as_root unshare --mount --propagation private -- /bin/bash -c '
    set -e; r=$1; tree=$2; shift 2
    mkdir -p "$r/src" "$r/proc" "$r/dev" "$r/sys"
    # The root on itself first: inside, / is then a mount point, which a root made from within
    # this one needs (unshare cannot make the propagation of a / that is no mount private).
    mount --bind "$r" "$r"
    mount -t proc proc "$r/proc"
    mount --rbind /dev "$r/dev"
    mount --rbind /sys "$r/sys"
    mount --bind "$tree" "$r/src"
    cp -L /etc/resolv.conf "$r/etc/resolv.conf" 2>/dev/null || true
    exec chroot "$r" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM="${TERM:-dumb}" \
      PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin CI="${CI:-}" "$@"
  ' run_in "$r" "$TREE" "$@"
}

make_root() {
  local name=$1 suite=${1%%-*} r partial mirror
  r=$(root_of "$name"); partial=$r.partial
  mirror=${DEBIAN_MIRROR:-$(apt_uri)}
  [ -n "$mirror" ] || die "this machine's apt sources name no Debian archive: set DEBIAN_MIRROR"
  command -v debootstrap >/dev/null 2>&1 || {
    say "installing debootstrap"
    as_root apt-get update -q >/dev/null
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends debootstrap >/dev/null
  }
  as_root rm -rf "$partial"; as_root mkdir -p "$ROOTS"
  say "debootstrap --variant=minbase $suite into $partial (a few minutes; log $ROOTS/$name.log)"
  local t0=$SECONDS
  as_root debootstrap --variant=minbase --components=main,contrib,non-free "$suite" "$partial" \
    "$mirror" >"$ROOTS/$name.log" 2>&1 || { tail -n 20 "$ROOTS/$name.log" >&2; die "debootstrap $suite failed"; }
  # The root's apt reads the same archive; contrib and non-free carry the CUDA build's packages.
  as_root rm -f "$partial/etc/apt/sources.list"
  printf 'Types: deb\nURIs: %s\nSuites: %s\nComponents: main contrib non-free\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$mirror" "$suite" | as_root tee "$partial/etc/apt/sources.list.d/debian.sources" >/dev/null
  # Documentation is not needed in a build root; man-db triggers only cost time.
  printf 'path-exclude /usr/share/doc/*\npath-exclude /usr/share/man/*\n' |
    as_root tee "$partial/etc/dpkg/dpkg.cfg.d/ddp-nodoc" >/dev/null
  as_root touch "$partial/.ddp-root-complete"
  as_root mv "$partial" "$r"
  say "root $r made in $((SECONDS - t0)) s"
}

ensure() {
  local name=$1; shift
  local r; r=$(root_of "$name")
  [ -f "$r/.ddp-root-complete" ] || { as_root rm -rf "$r"; make_root "$name"; }
  [ $# -eq 0 ] && return 0
  local missing=() p
  for p in "$@"; do
    as_root chroot "$r" dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
      missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  say "$name: installing ${missing[*]}"
  run_in "$r" /bin/sh -c 'apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "$@" && apt-get clean' \
    apt "${missing[@]}" >"$ROOTS/$name.apt.log" 2>&1 ||
    { tail -n 30 "$ROOTS/$name.apt.log" >&2; die "$name: apt-get install failed (log $ROOTS/$name.apt.log)"; }
}

case "${1:-}" in
  ensure) [ $# -ge 2 ] || die "usage: debian-root.sh ensure NAME [PACKAGES...]"; shift; ensure "$@" ;;
  run) [ $# -ge 3 ] || die "usage: debian-root.sh run NAME CMD..."
       r=$(root_of "$2"); [ -f "$r/.ddp-root-complete" ] || die "no root $2: run 'debian-root.sh ensure $2' first"
       shift 2; run_in "$r" "$@" ;;
  path) [ $# -eq 2 ] || die "usage: debian-root.sh path NAME"; root_of "$2" ;;
  *) sed -n '2,16s/^# \{0,1\}//p' "$0" >&2; exit 2 ;;
esac
