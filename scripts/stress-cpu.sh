#!/usr/bin/env bash
# Long stress runs of the asynchronous CPU sampler (crates/hprof-e2e/tests/cpu_stress.rs):
# every scenario (javac on 400 files, class loading/unloading storm, 64
# threads being deoptimised, virtual threads), each with SIGQUIT dumps every
# 250 ms, ROUNDS times per JDK, on the JDK on the PATH and on JDK 11, 21 and
# 25 (scripts/install-jdks.sh). Prints one STRESS line per run and a summary;
# exits non-zero on the first crash.
# Usage: scripts/stress-cpu.sh [rounds] (default 20)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
rounds="${1:-20}"
cargo build --release --quiet --workspace
cargo test --release --quiet -p hprof-e2e --test e2e --no-run
homes=("")
while read -r _major home; do homes+=("$home"); done < <(scripts/install-jdks.sh 11 21 25)
total=0
for home in "${homes[@]}"; do
  log=$(mktemp)
  if [ -n "$home" ]; then export HPROF_TEST_JDK="$home"; else unset HPROF_TEST_JDK; fi
  echo "=== ${home:-JDK on the PATH}: $rounds rounds per scenario"
  # --nocapture mixes the harness's "test ... " lines with ours: a STRESS
  # line may start in the middle of a line.
  HPROF_STRESS_ROUNDS="$rounds" cargo test --release --quiet -p hprof-e2e --test e2e -- cpu_stress:: --test-threads=1 --nocapture 2>&1 | tee "$log" | grep -oE "STRESS .*|skipped.*|panicked.*|FAILED.*" || true
  if grep -q "test result: ok" "$log"; then
    n=$(grep -oE "STRESS [a-z_]+ round [0-9]+: ok" "$log" | wc -l)
    total=$((total + n))
    echo "--- $n runs, 0 crashes"
  else
    echo "--- FAILED (log: $log)"
    exit 1
  fi
done
echo "=== $total runs in all, 0 crashes"
