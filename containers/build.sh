#!/bin/sh
# Runs inside the image build: compiles Batsim 4.2.1 and batsched (the
# revision Batsim 4.2.1 pins) with their libraries into $PREFIX. Each source
# is taken from /src/NAME.tar.gz when sources.sh put it in the build context,
# else cloned from its public repository at the pinned revision.
set -eu
PREFIX=${PREFIX:-/opt/batsim}
JOBS=${JOBS:-2}
work=/tmp/build
mkdir -p "$work" "$PREFIX/lib/pkgconfig" "$PREFIX/include"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"

source_of() {  # source_of NAME URL REV: the folder holding NAME's sources
    if [ -f "/src/$1.tar.gz" ]; then
        tar -xzf "/src/$1.tar.gz" -C "$work"
    else
        git clone -q "$2" "$work/$1" && git -C "$work/$1" checkout -q "$3"
    fi
    echo "$work/$1"
}
pc() {  # pc NAME LIBS: a pkg-config file for a library installed by hand
    printf 'prefix=%s\nName: %s\nDescription: %s\nVersion: 0\nLibs: -L${prefix}/lib %s\nCflags: -I${prefix}/include\n' \
        "$PREFIX" "$1" "$1" "$2" > "$PREFIX/lib/pkgconfig/$1.pc"
}

src=$(source_of intervalset https://framagit.org/batsim/intervalset.git "$INTERVALSET_REV")
# c++17 as Batsim itself: intervalset.cpp uses C++14 string literals ("..."s).
g++ -O2 -fPIC -shared -std=c++17 -I"$src/include" "$src/src/intervalset.cpp" -Wl,-soname,libintervalset.so -o "$PREFIX/lib/libintervalset.so"
cp "$src/include/intervalset.hpp" "$PREFIX/include/"
pc intervalset -lintervalset

src=$(source_of loguru https://github.com/emilk/loguru.git "$LOGURU_REV")
g++ -O2 -fPIC -shared -std=c++11 "$src/loguru.cpp" -Wl,-soname,libloguru.so -o "$PREFIX/lib/libloguru.so" -lpthread -ldl
cp "$src/loguru.hpp" "$PREFIX/include/"
pc loguru "-lloguru -lpthread -ldl"

src=$(source_of redox https://github.com/hmartiro/redox.git "$REDOX_REV")
cmake -S "$src" -B "$src/build" -DCMAKE_INSTALL_PREFIX="$PREFIX" -DCMAKE_INSTALL_LIBDIR=lib \
    -DCMAKE_BUILD_TYPE=Release -Dstatic_lib=OFF >/dev/null
make -C "$src/build" -j"$JOBS" install >/dev/null
# redox installs to lib64 whatever the install prefix says.
if [ -d "$PREFIX/lib64" ]; then mv "$PREFIX"/lib64/* "$PREFIX/lib/" && rmdir "$PREFIX/lib64"; fi
pc redox "-lredox -lhiredis -lev"

for name in batsim batsched; do
    if [ "$name" = batsim ]; then rev=$BATSIM_REV; else rev=$BATSCHED_REV; fi
    src=$(source_of "$name" "https://framagit.org/batsim/$name.git" "$rev")
    meson setup "$src/build" "$src" --buildtype=release --prefix="$PREFIX" -Dcpp_link_args="-Wl,-rpath,$PREFIX/lib"
    ninja -C "$src/build" -j"$JOBS" install
done
rm -rf "$work"
