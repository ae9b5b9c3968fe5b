#!/bin/sh
# Fills containers/sources/ (git-ignored) with the public sources the image
# build compiles, for machines whose builds cannot reach the internet. Each
# source comes from a local git mirror or checkout; a build on a connected
# machine does not need this: the Dockerfile fetches the same pinned tags.
#   BATSIM_GIT, BATSCHED_GIT, REDOX_GIT, LOGURU_GIT: git directories of
#   those projects; INTERVALSET_DIR: a checkout of intervalset (v1.2.0).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
out="$here/sources"
mkdir -p "$out"
mirror=${MIRROR:-/work/.mirror}
archive() {  # archive GIT_DIR REV NAME: NAME.tar.gz of REV, its files under NAME/
    git --git-dir="$1" archive --format=tar.gz --prefix="$3/" -o "$out/$3.tar.gz" "$2" \
        || { echo "sources.sh: cannot archive $2 of $1 (set the *_GIT variable)" >&2; exit 2; }
}
archive "${BATSIM_GIT:-$mirror/oar-team+batsim/repo}" "$BATSIM_REV" batsim
archive "${BATSCHED_GIT:-$mirror/oar-team+batsched/repo}" "$BATSCHED_REV" batsched
archive "${REDOX_GIT:-$mirror/hmartiro+redox/repo}" "$REDOX_REV" redox
archive "${LOGURU_GIT:-$mirror/emilk+loguru/repo}" "$LOGURU_REV" loguru
intervalset=${INTERVALSET_DIR:-/work/build/intervalset}
[ -f "$intervalset/src/intervalset.cpp" ] \
    || { echo "sources.sh: no intervalset checkout at $intervalset (set INTERVALSET_DIR)" >&2; exit 2; }
tar -czf "$out/intervalset.tar.gz" -C "$(dirname "$intervalset")" --transform "s|^$(basename "$intervalset")|intervalset|" \
    "$(basename "$intervalset")"
# A TLS proxy between the build and PyPI needs the machine's CA bundle.
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ ! -f "$ca" ] || cp "$ca" "$out/ca-certificates.crt"
ls -l "$out"
