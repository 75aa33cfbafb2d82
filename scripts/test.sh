#!/usr/bin/env bash
# Run every test: unit and integration tests on the JDK on the PATH, then the
# smoke set on the other supported JDKs (11, 21, 25) fetched by
# scripts/install-jdks.sh. Set HPROF_SKIP_OTHER_JDKS=1 to skip the latter.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
export CARGO_TERM_COLOR=never
# Each phase says how long it took (CI must stay under 25 minutes).
started=$SECONDS
phase() { echo "=== $1 took $((SECONDS - started)) s"; started=$SECONDS; }

# The browser and `go tool pprof` used by the UI tests (Debian packages).
# Without them those two tests say SKIPPED and the rest still runs.
scripts/install-test-tools.sh || echo "WARNING: test tools could not be installed; the UI browser and pprof tests will be skipped"
# hprof-slurp, one of the readers every heap dump must open (crates/hprof-e2e/tests/heap_dump.rs).
if slurp="$(scripts/install-hprof-slurp.sh)"; then
  export HPROF_SLURP="$slurp"
else
  echo "WARNING: hprof-slurp could not be installed; the heap dump tests will skip its checks"
fi
phase "installing test tools"
cargo build --release --all-targets --workspace
phase "build"
cargo test --release --workspace
phase "tests on the JDK on the PATH"

if [ "${HPROF_SKIP_OTHER_JDKS:-0}" != "1" ]; then
  # Smoke set: start-up, cpu=samples (text and binary), cpu=times, heap=sites, heap=dump (also
  # while classes load and clones churn), monitors, net, and hprof-rs attach/jvms and the attached agent (each JDK
  # answers attach a little differently), and the heap analyser on each JDK's dumps (sizes and field
  # layouts differ by JDK), and the JFR export read by each JDK's own `jfr`.
  scripts/install-jdks.sh 11 21 25 | while read -r major home; do
    echo "=== smoke tests on JDK $major ($("$home/bin/java" -version 2>&1 | head -1))"
    HPROF_TEST_JDK="$home" cargo test --release -p hprof-e2e --test e2e -- cpu_samples:: startup:: binary_output:: monitors:: net:: cpu_times:: alloc_sites:: heap_dump:: heap_dump_races:: live_counts:: attach_tool:: attach_agent:: heap_analyser:: exports::
    phase "smoke tests on JDK $major"
  done
fi
