#!/usr/bin/env bash
# Build the agent and profile an example program with cpu=samples.
# Usage: scripts/demo.sh [agent options]   (default: cpu=samples,interval=10,depth=6)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
opts="${1:-cpu=samples,interval=10,depth=6}"
cargo build --release --quiet --manifest-path "$root/Cargo.toml"
work="$root/target/demo"
mkdir -p "$work/classes"
javac --release 11 -g -d "$work/classes" "$root"/java-fixtures/*.java
report="$work/java.hprof.txt"
case "$opts" in *format=b*) report="$work/java.hprof" ;; esac
(cd "$work" && java "-agentpath:$root/target/release/libhprof_rs.so=$opts,file=$report" -cp classes CpuSplit 3)
echo
echo "report: $report"
if [[ "$report" == *.txt ]]; then
  sed -n '/^CPU SAMPLES BEGIN/,/^CPU SAMPLES END/p' "$report" | head -12
fi
