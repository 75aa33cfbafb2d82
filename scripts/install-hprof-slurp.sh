#!/usr/bin/env bash
# Install hprof-slurp (a heap dump analyzer people use, from crates.io) into
# .cache/tools, so the heap dump tests read every kind of dump the agent
# writes with it too (they look for it through HPROF_SLURP). Prints the
# path of the binary. Idempotent: does nothing when that version is there.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
version=0.10.0
dest="$root/.cache/tools"
bin="$dest/bin/hprof-slurp"
if ! "$bin" --version 2>/dev/null | grep -q "$version"; then
  cargo install --quiet --locked --root "$dest" --version "$version" hprof-slurp >&2
fi
"$bin" --version >/dev/null
echo "$bin"
