#!/usr/bin/env bash
# Installs Debian's Chromium (/usr/bin/chromium) for the serving page's browser test
# (tests/serving/test_page.py, driven by playwright's Python API), when it is missing.
# Idempotent: does nothing when /usr/bin/chromium runs. Where apt-get cannot run (not root and no
# passwordless sudo, no network), it says so and exits 0: the page test then skips, naming why.
set -uo pipefail
chromium=/usr/bin/chromium
if [ -x $chromium ] && $chromium --version >/dev/null 2>&1; then
    exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
        sudo="sudo -n"
    else
        echo "[browser] $chromium is missing and installing it needs root (apt-get): the page test will skip" >&2
        exit 0
    fi
fi
if ! command -v apt-get >/dev/null; then
    echo "[browser] $chromium is missing and this machine has no apt-get: the page test will skip" >&2
    exit 0
fi
echo "[browser] installing Debian's chromium (about a minute)" >&2
if ! { $sudo apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq chromium; } \
        >/dev/null 2>&1; then
    echo "[browser] apt-get could not install chromium: the page test will skip" >&2
    exit 0
fi
$chromium --version >&2 || echo "[browser] $chromium was installed but does not run: the page test will skip" >&2
exit 0
