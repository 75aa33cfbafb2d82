#!/usr/bin/env bash
# Compile the cpu=times Tracker (java.lang.HprofTracker) into the class file
# the agent embeds. Run after editing HprofTracker.java and commit both;
# crates/hprof-e2e/tests/cpu_times.rs checks that the committed class matches the source.
# Class-file version 55 (-source/-target 11): the oldest JDK the agent
# supports. Not --release 11: the Tracker reads native memory with
# java.base's own jdk.internal.misc.Unsafe, which --release hides; the class
# is compiled against the build JDK's java.base (JDK 17) and uses only
# methods JDK 11 to 25 all have (getUnsafe, getLongVolatile(Object, long)).
set -euo pipefail
cd "$(dirname "$0")/.."
src=crates/hprof-agent/src/profile/cpu_times/java
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${JAVAC:-javac}" -source 11 -target 11 -Xlint:-options --patch-module java.base="$src" -g:none -d "$out" \
    "$src/java/lang/HprofTracker.java"
cp "$out/java.base/java/lang/HprofTracker.class" "$src/HprofTracker.class" 2>/dev/null \
    || cp "$out/java/lang/HprofTracker.class" "$src/HprofTracker.class"
echo "wrote $src/HprofTracker.class"
