#!/bin/sh
# Fills containers/sources/ (git-ignored) with the pinned sources the image
# build compiles, for machines whose builds cannot reach the internet
# (docs/containers.md). A build on a connected machine does not need this:
# containers/build.sh clones the same pinned revisions itself.
#
#   BATSIM_GIT, BATSCHED_GIT, REDOX_GIT, LOGURU_GIT   git repositories of those
#       projects (a bare mirror or a checkout) holding the revisions pinned in
#       containers/versions.env
#   INTERVALSET_DIR   a folder with intervalset v1.2.0's src/intervalset.cpp
#       and include/intervalset.hpp (no git needed: their SHA-256 is checked)
#   CA_BUNDLE         the CA bundle pip is to trust behind a TLS proxy
#       (default: Debian's /etc/ssl/certs/ca-certificates.crt, when present)
#   SOURCES_OUT       where to write (default: containers/sources)
#
# Every source is checked against containers/versions.env before anything is
# written: a missing variable, a revision that is not there or resolves to
# another commit, or intervalset files with another hash end it in one line
# with exit status 2. Each archive is of the pinned commit, which git records
# in it; containers/build.sh checks that again inside the build.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/versions.env"
out=${SOURCES_OUT:-$here/sources}

fail() { echo "sources.sh: $*" >&2; exit 2; }

missing=""
for name in BATSIM_GIT BATSCHED_GIT REDOX_GIT LOGURU_GIT INTERVALSET_DIR; do
    eval "value=\${$name:-}"
    [ -n "$value" ] || missing="$missing $name"
done
[ -z "$missing" ] || fail "set${missing} (see the top of containers/sources.sh and docs/containers.md)"

for file in src/intervalset.cpp include/intervalset.hpp; do
    [ -f "$INTERVALSET_DIR/$file" ] || fail "INTERVALSET_DIR=$INTERVALSET_DIR has no $file"
done
cpp=$(sha256sum < "$INTERVALSET_DIR/src/intervalset.cpp" | cut -d' ' -f1)
hpp=$(sha256sum < "$INTERVALSET_DIR/include/intervalset.hpp" | cut -d' ' -f1)
[ "$cpp" = "$INTERVALSET_CPP_SHA256" ] && [ "$hpp" = "$INTERVALSET_HPP_SHA256" ] \
    || fail "INTERVALSET_DIR=$INTERVALSET_DIR is not intervalset $INTERVALSET_REV: its files' SHA-256 differ" \
            "from containers/versions.env"

git_dir() {  # git_dir PATH: PATH's git directory (a checkout's .git, or PATH itself when bare)
    if [ -d "$1/.git" ]; then echo "$1/.git"; else echo "$1"; fi
}
pinned() {  # pinned VARIABLE GIT REV COMMIT: REV's commit in GIT, refused unless it is COMMIT
    got=$(git --git-dir="$(git_dir "$2")" rev-parse --verify -q "$3^{commit}" 2>/dev/null) \
        || fail "$1=$2 has no revision $3 (pinned in containers/versions.env)"
    [ "$got" = "$4" ] || fail "$1=$2 has $3 at commit $got, not the pinned $4 (containers/versions.env)"
}
pinned BATSIM_GIT "$BATSIM_GIT" "$BATSIM_REV" "$BATSIM_COMMIT"
pinned BATSCHED_GIT "$BATSCHED_GIT" "$BATSCHED_REV" "$BATSCHED_COMMIT"
pinned REDOX_GIT "$REDOX_GIT" "$REDOX_REV" "$REDOX_COMMIT"
pinned LOGURU_GIT "$LOGURU_GIT" "$LOGURU_REV" "$LOGURU_COMMIT"

mkdir -p "$out"
archive() {  # archive GIT COMMIT NAME: NAME.tar.gz of COMMIT, its files under NAME/
    git --git-dir="$(git_dir "$1")" archive --format=tar.gz --prefix="$3/" -o "$out/$3.tar.gz" "$2"
}
archive "$BATSIM_GIT" "$BATSIM_COMMIT" batsim
archive "$BATSCHED_GIT" "$BATSCHED_COMMIT" batsched
archive "$REDOX_GIT" "$REDOX_COMMIT" redox
archive "$LOGURU_GIT" "$LOGURU_COMMIT" loguru
staging=$(mktemp -d)
mkdir -p "$staging/intervalset/src" "$staging/intervalset/include"
cp "$INTERVALSET_DIR/src/intervalset.cpp" "$staging/intervalset/src/"
cp "$INTERVALSET_DIR/include/intervalset.hpp" "$staging/intervalset/include/"
tar -czf "$out/intervalset.tar.gz" -C "$staging" intervalset
rm -rf "$staging"
# A TLS proxy between the build and PyPI needs the machine's CA bundle.
ca=${CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
[ ! -f "$ca" ] || cp "$ca" "$out/ca-certificates.crt"
ls -l "$out"
