#!/bin/sh
# Installs the headless browser the UI's browser test drives (tests/ui_browser.rs):
# Debian's chromium and its WebDriver server, chromium-driver.
# Run as root (or with sudo available). Safe to run again.
set -eu
if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then
    echo "chromium and chromedriver already installed"
    exit 0
fi
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q
$SUDO apt-get install -y -q --no-install-recommends chromium chromium-driver
chromium --version
chromedriver --version
