#!/usr/bin/env bash
# The web player's click-to-picture time: headless Chromium opens `tipipe serve`'s /player on a 60-minute
# 720p H.264 + AAC library (plaintext) over loopback and clicks 10 places spread over the hour, none of
# them buffered; each is timed in the page from the click to `seeked` (the picture at the clicked time is
# the element's). The server makes the HLS segments on the fly (two objects read, stream copy). RUNS
# browser sessions; min/median/max over every click. No peer runs here (Frigate, MediaMTX and vendors'
# consoles cannot be installed): an absolute figure against the issue's target (≤ 1 s).
# Usage: Benchmarks/player-seek.sh   (RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
runs=${RUNS:-5}
swift build -c release --package-path Benchmarks --product DecodeBenchmark >/dev/null
swift build -c release --product tipipe >/dev/null
bench=$PWD/Benchmarks/.build/release/DecodeBenchmark
tipipe=$PWD/.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
[ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
hour="$out/720p-60min-plain"
[ -f "$hour/index.json" ] || "$bench" extend "$hour" "$out/720p" 60 --plain >/dev/null
start=$(python3 -c "import json;print(json.load(open('$hour/index.json'))['segments'][0]['start_ms'])")
device=$(python3 -c "import json;print(json.load(open('$hour/index.json'))['device_id'])")
port=18480
"$tipipe" serve --root "$hour" --port "$port" --quiet >/dev/null &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
sleep 1
token=$("$tipipe" token --device-id "$device" --ttl 3600)
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0  commit $(git rev-parse --short HEAD)  ($(nproc) cores, shared machine: noisy)"
all=()
for run in $(seq "$runs"); do
  profile=$(mktemp -d)
  lines=$(timeout 300 chromium --headless=new --no-sandbox --disable-gpu --mute-audio \
    --autoplay-policy=no-user-gesture-required --enable-logging=stderr --v=0 --user-data-dir="$profile" \
    "http://127.0.0.1:$port/player#token=$token&start=$start&end=$((start + 3600000))&channel=0&audio=1&bench=10" 2>&1 |
    grep -o 'tipipe-player [a-z]* [^"]*' || true)
  rm -rf "$profile"
  if grep -q 'tipipe-player error' <<<"$lines"; then
    echo "run $run: $(grep 'tipipe-player error' <<<"$lines")" >&2
    exit 1
  fi
  times=$(grep -o 'ms=[0-9.]*' <<<"$lines" | sed 's/ms=//' | tr '\n' ' ')
  echo "run $run: $times"
  all+=($times)
done
python3 - "${all[@]}" <<'PY'
import statistics, sys
values = sorted(float(v) for v in sys.argv[1:])
print(f"click to picture, {len(values)} clicks: min {values[0]:.1f} ms, median {statistics.median(values):.1f} ms, max {values[-1]:.1f} ms")
PY
