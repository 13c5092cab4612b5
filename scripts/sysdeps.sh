#!/usr/bin/env bash
# Installs the Debian packages Colony's tests and benchmarks use. Safe to re-run; never prompts.
set -euo pipefail
need=()
command -v stress-ng >/dev/null 2>&1 || need+=(stress-ng)
command -v fusermount3 >/dev/null 2>&1 || need+=(fuse3)      # nearstore FUSE mount (optional)
# codec: libdeflate decodes DEFLATE segments in place (colony.codec.native); lz4/zstd ship with Debian
ldconfig -p 2>/dev/null | grep 'libdeflate\.so\.0' >/dev/null || need+=(libdeflate0)
command -v javac >/dev/null 2>&1 || need+=(default-jdk-headless)   # gateway JDBC test (scripts/jdbc.sh fetches the driver)
command -v openssl >/dev/null 2>&1 || need+=(openssl)                # gateway TLS test certificates
[ ${#need[@]} -eq 0 ] && exit 0
SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo -n"
export DEBIAN_FRONTEND=noninteractive
if ! $SUDO apt-get install -y -q "${need[@]}" >/dev/null 2>&1; then
  $SUDO apt-get update -q >/dev/null
  $SUDO apt-get install -y -q "${need[@]}" >/dev/null
fi
