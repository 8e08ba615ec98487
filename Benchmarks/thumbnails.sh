#!/usr/bin/env bash
# Scrub previews: `tipipe thumbnails` (one keyframe a minute sampled before decoding, a 160-pixel sprite
# and its WebVTT index) over a 720p H.264 library of 60 minutes against ffmpeg making the same sprite
# from the same media muxed as MPEG-TS (`-skip_frame nokey`: every keyframe decoded, one a minute kept,
# tiled), then tipipe alone over a 24-hour day (the target: ≤ 10 s on 2 cores). Interleaved runs
# (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of medians against ffmpeg).
# Usage: Benchmarks/thumbnails.sh   (RUNS=5)
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
day="$out/720p-1440min"
[ -f "$hour/index.json" ] || "$bench" extend "$hour" "$out/720p" 60 --plain >/dev/null
[ -f "$day/index.json" ] || "$bench" extend "$day" "$out/720p" 1440 >/dev/null
if [ ! -f "$hour/same.ts" ]; then
  "$bench" elementary "$hour" >/dev/null
  ffmpeg -v error -y -framerate 25 -f h264 -i "$hour/video.h264" -c copy "$hour/same.ts"
  rm -f "$hour/video.h264" "$hour/audio.aac"
fi
first() { python3 -c "import json;print(json.load(open('$1/index.json'))['segments'][0]['start_ms'])"; }
hs=$(first "$hour")
ds=$(first "$day")
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0  commit $(git rev-parse --short HEAD)  ($(nproc) cores, shared machine: noisy)"
echo "## one hour, one a minute: tipipe vs ffmpeg"
python3 Benchmarks/compare.py --runs "$runs" --versus ffmpeg \
  tipipe "$tipipe thumbnails --endpoint file://$PWD/$hour --start $hs --end $((hs + 3600000)) --video-channel 0 --every 60 --out $out/thumbs-hour" \
  ffmpeg "ffmpeg -v error -y -skip_frame nokey -i $hour/same.ts -vf fps=1/60,scale=160:90,tile=10x6 -frames:v 1 $out/thumbs-ffmpeg.jpg"
echo "## a day (24 h), one a minute: tipipe alone (target ≤ 10 s)"
python3 Benchmarks/compare.py --runs "$runs" \
  tipipe-day "$tipipe thumbnails --endpoint file://$PWD/$day --start $ds --end $((ds + 86400000)) --video-channel 0 --every 60 --out $out/thumbs-day"
"$tipipe" thumbnails --endpoint "file://$PWD/$day" --start "$ds" --end $((ds + 86400000)) --video-channel 0 --every 60 --out "$out/thumbs-day"
ffprobe -v error -show_entries stream=width,height -of csv=p=0 "$out/thumbs-day/thumbnails.jpg"
