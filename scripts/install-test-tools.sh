#!/bin/sh
# Installs the Debian packages some tests drive, so that a clean machine runs
# every test instead of skipping some:
#   chromium, chromium-driver  headless browser for the UI test (crates/hprof-e2e/tests/ui_browser.rs)
#   golang-go                  `go tool pprof`, the independent reader of
#                              `hprof-rs export --pprof` output (crates/hprof-e2e/tests/ui_export.rs)
# Run as root (or with sudo available). Safe to run again: it does nothing when
# everything is already there.
set -eu
missing=""
command -v chromium >/dev/null 2>&1 || missing="$missing chromium"
command -v chromedriver >/dev/null 2>&1 || missing="$missing chromium-driver"
command -v go >/dev/null 2>&1 || missing="$missing golang-go"
if [ -z "$missing" ]; then
    echo "test tools already installed: chromium, chromedriver, go"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
# shellcheck disable=SC2086 # word splitting of the package list is intended
$SUDO apt-get install -y -q --no-install-recommends $missing
chromium --version
chromedriver --version
go version
