#!/bin/sh
# Runs inside the image build (Dockerfile, stage `build`): compiles Batsim
# 4.2.1 and batsched (the revision Batsim 4.2.1 pins) with their libraries
# into $PREFIX, from the revisions containers/versions.env pins (read into the
# environment before this runs). Each source is taken from /src/NAME.tar.gz
# when sources.sh put it in the build context, else cloned from its public
# repository; either way it is refused unless it is the pinned revision.
set -eu
PREFIX=${PREFIX:-/opt/batsim}
JOBS=${JOBS:-2}
work=/tmp/build
mkdir -p "$work" "$PREFIX/lib/pkgconfig" "$PREFIX/include"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

fail() { echo "build.sh: $*" >&2; exit 2; }

source_of() {  # source_of NAME URL REV COMMIT: the folder holding NAME's sources at COMMIT
    if [ -f "/src/$1.tar.gz" ]; then
        # git archive records the commit it archived (sources.sh archives the pinned one).
        got=$(gzip -dc "/src/$1.tar.gz" | git get-tar-commit-id) || got="none recorded"
        [ "$got" = "$4" ] || fail "/src/$1.tar.gz is of commit $got, not the pinned $4: run containers/sources.sh again"
        tar -xzf "/src/$1.tar.gz" -C "$work"
    else
        git clone -q "$2" "$work/$1" >&2 && git -C "$work/$1" checkout -q "$3" >&2
        got=$(git -C "$work/$1" rev-parse HEAD)
        [ "$got" = "$4" ] || fail "$2 has $3 at commit $got, not the pinned $4"
    fi
    echo "$work/$1"
}
pc() {  # pc NAME LIBS: a pkg-config file for a library installed by hand
    printf 'prefix=%s\nName: %s\nDescription: %s\nVersion: 0\nLibs: -L${prefix}/lib %s\nCflags: -I${prefix}/include\n' \
        "$PREFIX" "$1" "$1" "$2" > "$PREFIX/lib/pkgconfig/$1.pc"
}

# intervalset: the two files by SHA-256 (a folder of them, from sources.sh, has no commit).
if [ -f /src/intervalset.tar.gz ]; then
    tar -xzf /src/intervalset.tar.gz -C "$work"
else
    git clone -q https://framagit.org/batsim/intervalset.git "$work/intervalset" >&2
    git -C "$work/intervalset" checkout -q "$INTERVALSET_REV"
fi
src=$work/intervalset
echo "$INTERVALSET_CPP_SHA256  $src/src/intervalset.cpp
$INTERVALSET_HPP_SHA256  $src/include/intervalset.hpp" | sha256sum -c --quiet \
    || fail "intervalset's files are not those of $INTERVALSET_REV (containers/versions.env)"
# c++17 as Batsim itself: intervalset.cpp uses C++14 string literals ("..."s).
g++ -O2 -fPIC -shared -std=c++17 -I"$src/include" "$src/src/intervalset.cpp" -Wl,-soname,libintervalset.so -o "$PREFIX/lib/libintervalset.so"
cp "$src/include/intervalset.hpp" "$PREFIX/include/"
pc intervalset -lintervalset

src=$(source_of loguru https://github.com/emilk/loguru.git "$LOGURU_REV" "$LOGURU_COMMIT")
g++ -O2 -fPIC -shared -std=c++11 "$src/loguru.cpp" -Wl,-soname,libloguru.so -o "$PREFIX/lib/libloguru.so" -lpthread -ldl
cp "$src/loguru.hpp" "$PREFIX/include/"
pc loguru "-lloguru -lpthread -ldl"

src=$(source_of redox https://github.com/hmartiro/redox.git "$REDOX_REV" "$REDOX_COMMIT")
cmake -S "$src" -B "$src/build" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_BUILD_TYPE=Release -Dstatic_lib=OFF >/dev/null
make -C "$src/build" -j"$JOBS" install >/dev/null
# redox installs to lib64 whatever the install prefix says.
if [ -d "$PREFIX/lib64" ]; then mv "$PREFIX"/lib64/* "$PREFIX/lib/" && rmdir "$PREFIX/lib64"; fi
pc redox "-lredox -lhiredis -lev"

for name in batsim batsched; do
    if [ "$name" = batsim ]; then rev=$BATSIM_REV commit=$BATSIM_COMMIT; else rev=$BATSCHED_REV commit=$BATSCHED_COMMIT; fi
    src=$(source_of "$name" "https://framagit.org/batsim/$name.git" "$rev" "$commit")
    meson setup "$src/build" "$src" --buildtype=release --prefix="$PREFIX" -Dcpp_link_args="-Wl,-rpath,$PREFIX/lib"
    ninja -C "$src/build" -j"$JOBS" install
done
rm -rf "$work"
