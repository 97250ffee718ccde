#!/usr/bin/env sh
# System packages jgtest's bridges need, installed with apt-get where missing (idempotent):
# Debian's supertuxkart-data (SuperTuxKart's assets: the game never downloads them), and chromium
# with its driver (the HTML report's test opens the page in a real headless browser).
set -eu
PACKAGES="supertuxkart-data chromium chromium-driver"
missing=""
for package in $PACKAGES; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" || missing="$missing $package"
done
[ -z "$missing" ] && exit 0
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get install -y -q $missing || { $SUDO apt-get update -q && $SUDO apt-get install -y -q $missing; }
