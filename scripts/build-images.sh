#!/usr/bin/env bash
# Builds the operator and CPU worker images (dockerfiles/) from the repository root with the
# first container builder that works here: docker (with a daemon), podman, buildah.
#
#   scripts/build-images.sh [--builder] [--check]
#     (no option)  build ddp-operator:$TAG and ddp-worker-cpu:$TAG
#     --builder    print the builder's name and exit (exit 1 with the reason when there is none)
#
# Environment: TAG (default: the project's version, CMakeLists.txt's project(VERSION), also
# the images' org.opencontainers.image.version label), IMAGES (default "operator worker-cpu"),
# BUILDER (force one), BUILD_FLAGS (extra flags for the build command, e.g. "--network host --pull=never" where no
# registry is reachable and the base images were loaded by hand).
set -euo pipefail
cd "$(dirname "$0")/.."
VERSION=$(sed -n 's/^project(ddp VERSION \([0-9][0-9.]*\) .*/\1/p' CMakeLists.txt)
[ -n "$VERSION" ] || { echo "build-images: no project(ddp VERSION x.y.z ...) in CMakeLists.txt" >&2; exit 2; }
TAG=${TAG:-$VERSION}
IMAGES=${IMAGES:-operator worker-cpu}

# find_builder: the first of docker, podman, buildah that can build; prints its name, or the
# reason none can on stderr.
find_builder() {
  if [ -n "${BUILDER:-}" ]; then echo "$BUILDER"; return 0; fi
  local why=""
  if command -v docker >/dev/null 2>&1; then
    if docker info >/dev/null 2>&1; then echo docker; return 0; fi
    why="docker is installed but its daemon does not answer (docker info fails); "
  fi
  if command -v podman >/dev/null 2>&1; then echo podman; return 0; fi
  if command -v buildah >/dev/null 2>&1; then echo buildah; return 0; fi
  echo "${why}no docker, podman or buildah found: install one of them" >&2
  return 1
}

builder=$(find_builder) || exit 1
if [ "${1:-}" = "--builder" ]; then echo "$builder"; exit 0; fi

for image in $IMAGES; do
  df=dockerfiles/$image.Dockerfile
  [ -f "$df" ] || { echo "build-images: no $df" >&2; exit 2; }
  name=ddp-$image:$TAG
  echo "build-images: $name from $df with $builder"
  start=$(date +%s)
  # shellcheck disable=SC2086  # BUILD_FLAGS is a list of flags
  case $builder in
    docker) docker build ${BUILD_FLAGS:-} --build-arg "DDP_VERSION=$VERSION" -f "$df" -t "$name" . ;;
    podman) podman build --layers ${BUILD_FLAGS:-} --build-arg "DDP_VERSION=$VERSION" -f "$df" -t "$name" . ;;
    buildah) buildah bud --layers ${BUILD_FLAGS:-} --build-arg "DDP_VERSION=$VERSION" -f "$df" -t "$name" . ;;
    *) echo "build-images: unknown builder $builder" >&2; exit 2 ;;
  esac
  # A builder stopped by a signal may still exit 0: believe the image store, not the status.
  case $builder in
    docker) docker image inspect "$name" >/dev/null 2>&1 ;;
    podman) podman image exists "$name" ;;
    buildah) buildah inspect --type image "$name" >/dev/null 2>&1 ;;
  esac || { echo "build-images: $builder finished but there is no image $name" >&2; exit 1; }
  echo "build-images: $name built in $(( $(date +%s) - start )) s"
done
