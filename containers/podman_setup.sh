#!/bin/sh
# Sets rootful Podman up on a Debian 12 machine that reaches no container
# registry and must keep its firewall as it is (docs/containers.md):
# host networking only, runc, no systemd; the base image debian:bookworm is
# built with debootstrap from the machine's Debian mirror. Idempotent.
set -eu
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
socket=${PODMAN_SOCKET:-/run/podman/podman.sock}

# --no-install-recommends: docker-compose recommends docker.io and containerd, whose post-install
# starts dockerd, which creates a bridge network (docker0) and rewrites the firewall.
apt-get -qq update
DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends \
    podman runc debootstrap docker-compose curl ca-certificates >/dev/null
# podman-compose 1.6 from PyPI, in its own virtual environment.
[ -x /opt/podman-compose/bin/podman-compose ] || {
    python3 -m venv /opt/podman-compose
    /opt/podman-compose/bin/pip install -q 'podman-compose==1.6.*'
    ln -sf /opt/podman-compose/bin/podman-compose /usr/local/bin/podman-compose
}

# crun fails here; runc needs the ulimits set, or it fails with "setrlimit ... operation not permitted".
# netns="host": bridge networks would rewrite the machine's firewall.
mkdir -p /etc/containers
cat > /etc/containers/containers.conf <<'CONF'
[containers]
netns = "host"
default_ulimits = ["nofile=20000:20000", "nproc=32768:32768"]

[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
CONF

if ! podman image exists debian:bookworm; then
    rootfs=$(mktemp -d)
    debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >/dev/null
    tar -C "$rootfs" -c . | podman import - debian:bookworm
    rm -rf "$rootfs"
fi

# Docker's API on a unix socket, for docker-compose and batio's --engine docker.
if ! curl -s --unix-socket "$socket" http://d/_ping >/dev/null 2>&1; then
    mkdir -p "$(dirname "$socket")"
    nohup podman system service --time=0 "unix://$socket" >/var/log/podman-service.log 2>&1 &
fi
echo "podman ready; for docker-compose and --engine docker: export DOCKER_HOST=unix://$socket"
