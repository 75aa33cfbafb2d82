#!/usr/bin/env bash
# Compile the cpu=times Tracker (java.lang.HprofTracker) into the class file
# the agent embeds. Run after editing HprofTracker.java and commit both;
# tests/cpu_times.rs checks that the committed class matches the source.
# Class-file version 55 (--release 11): the oldest JDK the agent supports.
set -euo pipefail
cd "$(dirname "$0")/.."
src=src/profile/cpu_times/java
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
"${JAVAC:-javac}" --release 11 --patch-module java.base="$src" -g:none -d "$out" \
    "$src/java/lang/HprofTracker.java"
cp "$out/java.base/java/lang/HprofTracker.class" "$src/HprofTracker.class" 2>/dev/null \
    || cp "$out/java/lang/HprofTracker.class" "$src/HprofTracker.class"
echo "wrote $src/HprofTracker.class"
