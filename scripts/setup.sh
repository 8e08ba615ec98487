#!/usr/bin/env bash
# Installs every Debian package tipipe needs to build, test, demo and benchmark.
# Idempotent: packages already present are skipped without touching apt.
set -euo pipefail

packages=(
  pkg-config
  libavcodec-dev libavformat-dev libavutil-dev libswresample-dev libswscale-dev
  libcurl4-openssl-dev libssl-dev zlib1g-dev libmicrohttpd-dev libarchive-dev
  ffmpeg curl
  gstreamer1.0-tools gstreamer1.0-plugins-good
  mkvtoolnix  # a third MP4 reader judging recorded files (GPAC is not packaged here)
  time
  chromium  # browser tests: exported files played in a <video> element
  libsdl2-dev  # DesktopOutputs: the window of `tipipe play --window`
  xvfb xdotool  # window tests: a display server, keys typed from outside
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  sudo_cmd=()
  [ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Swift toolchain ships in /opt/swift on our machines; make it findable for callers.
if ! command -v swift >/dev/null 2>&1 && [ -x /opt/swift/usr/bin/swift ]; then
  echo "setup: swift is at /opt/swift/usr/bin (add it to PATH)" >&2
fi
