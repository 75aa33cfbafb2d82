#!/usr/bin/env bash
# Builds the release tarball dist/hprof-rs-<version>-linux-x86_64.tar.gz:
# bin/hprof-rs and lib/libhprof_rs.so, linked against glibc 2.17 so that
# both run on any x86_64 Linux from glibc 2.17 on (RHEL/CentOS 7 and
# later), whatever glibc the build machine has (docs/release.md).
#
# The old glibc comes from cargo-zigbuild with zig as the linker (both
# from PyPI, installed into .cache/release-tools on first use). The
# script checks what it built: the highest glibc symbol version that
# `objdump -T` shows in either file must be 2.17 or lower, and no symbol
# may be left unversioned and strong (one glibc would lack at load time).
#
# Usage: scripts/release.sh [OUT_DIR]    (default: dist)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
OUT=${1:-dist}
GLIBC=2.17
TARGET=x86_64-unknown-linux-gnu
TOOLS="$ROOT/.cache/release-tools"

if [ ! -x "$TOOLS/bin/cargo-zigbuild" ] || ! "$TOOLS/bin/python" -m ziglang version >/dev/null 2>&1; then
    echo "=== installing cargo-zigbuild and zig (PyPI) into .cache/release-tools"
    python3 -m venv "$TOOLS"
    "$TOOLS/bin/pip" install --quiet --disable-pip-version-check cargo-zigbuild ziglang
fi
export PATH="$TOOLS/bin:$PATH"

VERSION=$(cargo metadata --no-deps --format-version 1 |
    python3 -c 'import json,sys; print(next(p["version"] for p in json.load(sys.stdin)["packages"] if p["name"]=="hprof-cli"))')
NAME="hprof-rs-$VERSION-linux-x86_64"
echo "=== building $NAME against glibc $GLIBC"
cargo zigbuild --release --target "$TARGET.$GLIBC" -p hprof-agent -p hprof-cli
BUILT="$ROOT/target/$TARGET/release"

STAGE=$(mktemp -d)
trap 'rm -rf "$STAGE"' EXIT
mkdir -p "$STAGE/$NAME/bin" "$STAGE/$NAME/lib"
# Debug information stays in the build tree (it is 4/5 of the files'
# size); the symbols stay, so native stacks in hs_err files are named.
objcopy --strip-debug "$BUILT/hprof-rs" "$STAGE/$NAME/bin/hprof-rs"
objcopy --strip-debug "$BUILT/libhprof_rs.so" "$STAGE/$NAME/lib/libhprof_rs.so"
cp README.md "$STAGE/$NAME/"
[ -f LICENSE ] && cp LICENSE "$STAGE/$NAME/"

status=0
for f in bin/hprof-rs lib/libhprof_rs.so; do
    syms=$(objdump -T "$STAGE/$NAME/$f")
    highest=$(grep -o 'GLIBC_[0-9.]*' <<<"$syms" | sort -Vu | tail -1)
    echo "$f: highest glibc symbol version $highest"
    if [ "$(printf '%s\n%s\n' "$highest" "GLIBC_$GLIBC" | sort -V | tail -1)" != "GLIBC_$GLIBC" ]; then
        echo "error: $f needs $highest, above glibc $GLIBC" >&2
        status=1
    fi
    # An undefined symbol with no version that is not weak: the link took
    # it from no glibc of $GLIBC, so the loader would refuse the file.
    unversioned=$(awk '$2 != "w" && $0 ~ /\*UND\*/ && $0 !~ /GLIBC_|GCC_|CXXABI|\(/ { print $NF }' <<<"$syms" |
        grep -v '^$' || true)
    if [ -n "$unversioned" ]; then
        echo "error: $f has undefined symbols no glibc $GLIBC defines: $unversioned" >&2
        status=1
    fi
done
[ $status -eq 0 ] || exit $status

mkdir -p "$OUT"
tar -C "$STAGE" -czf "$OUT/$NAME.tar.gz" "$NAME"
echo "=== $OUT/$NAME.tar.gz ($(du -h "$OUT/$NAME.tar.gz" | cut -f1))"
