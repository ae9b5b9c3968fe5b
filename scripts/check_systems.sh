#!/usr/bin/env bash
# Runs the README's two commands (scripts/demo.sh, scripts/test.sh) on fresh
# minimal systems and prints one Markdown table row per system:
#     sudo scripts/check_systems.sh [SUITE...]      (default: bookworm trixie)
# SUITE is a Debian suite (bookworm, trixie, ...) or ubuntu:SUITE (noble...).
# Each system is a `debootstrap --variant=minbase` root, built once and cached
# in $BATIO_SYSTEMS_DIR (default /var/tmp/batio-systems); every check runs on
# a throw-away overlay of it, in a chroot inside a private mount namespace, so
# nothing is left mounted and the cached root stays pristine. The repository
# goes in as a fresh clone of HEAD, with ../shared beside it read-only (tests
# read data from it). Needs root, debootstrap, git and overlayfs; the logs of
# each run are kept in $BATIO_SYSTEMS_DIR/logs/. The Tests column is pytest's
# counts, or the step of scripts/test.sh that failed; the exit status is 1
# when a system's demo or tests failed (tests/test_check_systems.py sources
# this file for its summary functions).
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
DIR=${BATIO_SYSTEMS_DIR:-/var/tmp/batio-systems}
# Longest wait for each command (CI's limit): a SimGrid that hangs the engine must not hang the check.
LIMIT=${BATIO_CHECK_LIMIT:-90m}
DEBIAN_MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
UBUNTU_MIRROR=${UBUNTU_MIRROR:-http://archive.ubuntu.com/ubuntu}
# Debian's package ubuntu-keyring (apt-get install ubuntu-keyring, or its files unpacked anywhere).
UBUNTU_KEYRING=${UBUNTU_KEYRING:-/usr/share/keyrings/ubuntu-archive-keyring.gpg}
# A log's last line without file paths, cut to 100 characters.
last() { tail -n1 "$1" | sed -E 's/^=+ //; s/ =+$//; s| \(/[^)]*\)||' | cut -c1-100; }

# The Tests column from a log of scripts/test.sh: pytest's counts ("3 failed, 1056 passed, 12 skipped
# in 500.1s"), else the step that failed ("FAILED: the lint (ruff check .) check, exit status 1"), else
# the last line.
test_summary() {
    local counts step
    counts=$(grep -E '^=+ .*[0-9]+ (passed|failed|errors?|skipped|deselected).* in [0-9.]+s' "$1" | tail -n1 \
             | sed -E 's/^=+ //; s/ =+$//' | cut -c1-100 || true)
    if [ -n "$counts" ]; then echo "$counts"; return; fi
    step=$(grep -oE 'scripts/test.sh: the .* check failed \(exit status [0-9]+' "$1" | tail -n1 \
           | sed -E 's|scripts/test.sh: (the .* check) failed \((exit status [0-9]+)|FAILED: \1, \2|' || true)
    if [ -n "$step" ]; then echo "$step"; return; fi
    echo "FAILED: $(last "$1")"
}

# Builds the cached root of one system once.
build_root() {
    local system=$1 root=$DIR/roots/${1/:/-} suite=${1#ubuntu:}
    [ -x "$root/usr/bin/apt-get" ] && return 0
    rm -rf "$root.tmp"
    mkdir -p "$DIR/roots"
    local args=(--variant=minbase)
    if [ "$system" != "$suite" ]; then
        # Ubuntu: python3-simgrid is in universe; debootstrap knows every
        # recent release by the script of its first systemd-era one.
        args+=(--components=main,universe --keyring="$UBUNTU_KEYRING" "$suite" "$root.tmp" "$UBUNTU_MIRROR" /usr/share/debootstrap/scripts/gutsy)
    else
        args+=("$suite" "$root.tmp" "$DEBIAN_MIRROR")
    fi
    if ! debootstrap "${args[@]}" >"$DIR/logs/$suite-debootstrap.log" 2>&1; then
        echo "debootstrap could not build $system: $(tail -n1 "$DIR/logs/$suite-debootstrap.log")" >&2
        return 1
    fi
    mv "$root.tmp" "$root"
}

# Runs the README's commands in a throw-away overlay of the root; prints a row.
check() {
    local system=$1 root=$DIR/roots/${1/:/-} suite=${1#ubuntu:} run
    run=$(mktemp -d "$DIR/run-$suite.XXXX")
    mkdir -p "$run/upper" "$run/work" "$run/merged"
    git clone -q "$REPO" "$run/clone"
    local log=$DIR/logs/$suite
    # Inside the namespace: the overlay, /proc /sys /dev, the clone, ../shared.
    unshare --mount --propagation private bash -euo pipefail -c '
        run=$1 root=$2 shared=$3 log=$4 limit=$5
        m=$run/merged
        mount -t overlay overlay -o "lowerdir=$root,upperdir=$run/upper,workdir=$run/work" "$m"
        for d in proc sys dev; do mount --rbind "/$d" "$m/$d"; done
        cp /etc/resolv.conf "$m/etc/resolv.conf"
        # pip inside uses the CA bundle pip uses here (a TLS-inspecting proxy may sit between this machine and PyPI).
        cp "$(python3 -m pip config get global.cert 2>/dev/null || echo /etc/ssl/certs/ca-certificates.crt)" "$m/etc/host-ca.crt"
        # The clone at /batio, as in the image, with ../shared beside it.
        mkdir -p "$m/batio" "$m/shared"
        mount --bind "$run/clone" "$m/batio"
        if [ -d "$shared" ]; then mount --bind "$shared" "$m/shared" && mount -o remount,bind,ro "$m/shared"; fi
        inside() { timeout --kill-after=30 "$limit" chroot "$m" env -i HOME=/root LANG=C.UTF-8 PIP_CERT=/etc/host-ca.crt PATH=/usr/sbin:/usr/bin:/sbin:/bin \
                   bash -c "cd /batio && $1"; }
        start=$(date +%s); rc=0; inside scripts/demo.sh >"$log-demo.log" 2>&1 || rc=$?
        echo "demo $rc $(( $(date +%s) - start ))" >"$run/result"
        start=$(date +%s); rc=0; inside "scripts/test.sh -q -p no:cacheprovider" >"$log-test.log" 2>&1 || rc=$?
        echo "test $rc $(( $(date +%s) - start ))" >>"$run/result"
        inside ".venv/bin/python -c \"import platform, simgrid; print(platform.python_version(), simgrid.simgrid_version)\"" \
            >>"$run/result" 2>/dev/null || echo "- -" >>"$run/result"
        cp "$run/clone/.venv/pip.log" "$log-pip.log" 2>/dev/null || true
        inside ". /etc/os-release && echo \$PRETTY_NAME" >>"$run/result"
    ' _ "$run" "$root" "$REPO/../shared" "$log" "$LIMIT"
    report_row "$run/result" "$log"
    rm -rf "$run"
}

# Prints the table row of one system from its result file and logs (LOG-demo.log, LOG-test.log);
# sets FAILED=1 when its demo or tests failed.
report_row() {
    local result=$1 log=$2 demo_rc demo_s test_rc test_s python simgrid os_name summary demo
    read -r _ demo_rc demo_s < <(sed -n 1p "$result")
    read -r _ test_rc test_s < <(sed -n 2p "$result")
    read -r python simgrid < <(sed -n 3p "$result")
    os_name=$(sed -n 4p "$result")
    demo=$([ "$demo_rc" -eq 0 ] && echo "ok" || echo "FAILED: $(last "$log-demo.log")")
    summary=$(test_summary "$log-test.log")
    [ "$demo_rc" -eq 0 ] && [ "$test_rc" -eq 0 ] || FAILED=1
    printf '| %s | %s | %s | %s | %s | %s | %s s + %s s |\n' "$os_name" "$python" "$simgrid" "$demo" \
        "$summary" "$test_rc" "$demo_s" "$test_s"
}

main() {
    [ "$#" -gt 0 ] || set -- bookworm trixie
    if [ "$(id -u)" -ne 0 ] || ! command -v debootstrap >/dev/null; then
        echo "check_systems.sh needs root and debootstrap (apt-get install debootstrap)." >&2
        exit 1
    fi
    mkdir -p "$DIR/logs"
    FAILED=0
    echo "| System | Python | SimGrid | Demo | Tests | Exit code | Wall time (demo + tests) |"
    echo "|---|---|---|---|---|---|---|"
    for system in "$@"; do
        if build_root "$system"; then check "$system"; else FAILED=1; fi
    done
    if [ "$FAILED" -ne 0 ]; then
        echo "check_systems.sh: a system's demo or tests failed (logs: $DIR/logs/)" >&2
        exit 1
    fi
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
