#!/usr/bin/env bash
# System packages needed to build Co-Simulation FMUs: SUNDIALS CVODE (static libraries and
# headers, Debian package libsundials-dev). Idempotent and quiet: does nothing when the
# headers and static libraries are already there. Installs with apt-get only when running as
# root on a Debian-like system; otherwise says what to install and exits 1.
set -euo pipefail

have_sundials() {
  [ -f /usr/include/cvode/cvode.h ] || return 1
  for lib in sundials_cvode sundials_nvecserial sundials_sunlinsoldense sundials_sunmatrixdense; do
    compgen -G "/usr/lib/*/lib${lib}.a" >/dev/null || compgen -G "/usr/lib/lib${lib}.a" >/dev/null \
      || return 1
  done
  return 0
}

if have_sundials; then
  exit 0
fi

if [ "$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null 2>&1; then
  echo "install-system-deps: SUNDIALS (CVODE) static libraries are missing." >&2
  echo "  Debian/Ubuntu: sudo apt-get install libsundials-dev" >&2
  exit 1
fi

export DEBIAN_FRONTEND=noninteractive
if ! apt-get install -y -qq libsundials-dev >/dev/null 2>&1; then
  apt-get update -qq >/dev/null
  apt-get install -y -qq libsundials-dev >/dev/null
fi

if ! have_sundials; then
  echo "install-system-deps: libsundials-dev installed but CVODE static libraries not found" >&2
  exit 1
fi
