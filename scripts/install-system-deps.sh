#!/usr/bin/env bash
# System packages the tests need: SUNDIALS CVODE (static libraries and headers, Debian package
# libsundials-dev) to build Co-Simulation FMUs, and headless Chromium with its WebDriver
# (Debian packages chromium and chromium-driver) to test the HTML reports of compare/regress.
# Idempotent and quiet: does nothing when everything is already there. Installs with apt-get
# only when running as root on a Debian-like system; otherwise says what to install and exits 1.
set -euo pipefail

have_sundials() {
  [ -f /usr/include/cvode/cvode.h ] || return 1
  for lib in sundials_cvode sundials_nvecserial sundials_sunlinsoldense sundials_sunmatrixdense; do
    compgen -G "/usr/lib/*/lib${lib}.a" >/dev/null || compgen -G "/usr/lib/lib${lib}.a" >/dev/null \
      || return 1
  done
  return 0
}

have_chromium() {
  command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1
}

missing=()
have_sundials || missing+=(libsundials-dev)
have_chromium || missing+=(chromium chromium-driver)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-system-deps: missing system packages: ${missing[*]}" >&2
  echo "  Debian/Ubuntu: sudo apt-get install ${missing[*]}" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

if ! have_sundials; then
  echo "install-system-deps: libsundials-dev installed but CVODE static libraries not found" >&2
  exit 1
fi
if ! have_chromium; then
  echo "install-system-deps: chromium/chromium-driver installed but chromium or chromedriver" \
    "is not on PATH" >&2
  exit 1
fi
