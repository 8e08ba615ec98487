#!/usr/bin/env bash
# Snapshot of one mid-GOP frame of the 720p library (plaintext, 10 s objects, 2 s GOPs): `tipipe
# snapshot --at T` (list, fetch the object, verify, demux from the keyframe before T, decode to the
# first frame not earlier than T, JPEG) against `ffmpeg -ss S -i same.ts -frames:v 1 out.jpg` on the
# same media muxed as MPEG-TS (made by export-vs-ffmpeg.sh), whole processes, interleaved
# (Benchmarks/compare.py). Then in-process seek latency: `tipipe bench seek` (a real-time Replay, 20
# random seeks, time from `seek` to the first frame at the target presented). Then replay of one minute of
# 1080p (encrypted): the CPU of a 1x replay (`tipipe play --pace fast`, the same semantics on a
# free-running clock, one decoding thread) against `ffmpeg -threads 1` decoding the same access units; and
# an 8x replay in real time pinned to one core (`taskset -c 0`), whose summary says how many frames were
# dropped as late (keyframes-only decoding allowed).
# Usage: Benchmarks/replay-vs-ffmpeg.sh [minutes]   (default 60; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
minutes=${1:-60}
runs=${RUNS:-5}
swift build -c release --package-path Benchmarks --product DecodeBenchmark >/dev/null
swift build -c release --product tipipe >/dev/null
bench=$PWD/Benchmarks/.build/release/DecodeBenchmark
tipipe=$PWD/.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
. Benchmarks/libraries.sh
library_720p "$minutes"
library_1080p
plain=$PWD/Benchmarks/out/720p-${minutes}min-plain
start=$(python3 -c "import json;print(json.load(open('$plain/index.json'))['segments'][0]['start_ms'])")
# Half-way, 1.01 s into a GOP (GOPs start every 2 s).
offset=$((minutes * 30000 + 1010))
at=$((start + offset))
seconds=$(python3 -c "print($offset / 1000)")
# The TS's first timestamp: -ss counts from the file's start.
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $minutes commit $(git rev-parse --short HEAD)  ($(nproc) cores, $(ffmpeg -version | head -1 | cut -d' ' -f1-3))"
echo "snapshot at +${seconds} s of $minutes min 720p:"
python3 Benchmarks/compare.py --runs "$runs" --versus ffmpeg \
  tipipe "$tipipe snapshot --endpoint file://$plain --at $at --video-channel 0 --out $plain/../tipipe-snapshot.jpg" \
  ffmpeg "ffmpeg -v error -y -ss $seconds -i $plain/same.ts -frames:v 1 $plain/../ffmpeg-snapshot.jpg"
ffprobe -v error -show_entries stream=width,height -of csv=p=0 "$plain/../tipipe-snapshot.jpg" | sed 's/^/tipipe snapshot size: /'
echo "in-process seek latency, real-time replay of the first 10 minutes:"
"$tipipe" bench seek --endpoint "file://$plain" --start "$start" --end $((start + 600000)) --video-channel 0 --seeks 20
rm -f "$plain/../tipipe-snapshot.jpg" "$plain/../ffmpeg-snapshot.jpg"

hd=$PWD/Benchmarks/out/1080p
hstart=$(python3 -c "import json;print(json.load(open('$hd/index.json'))['segments'][0]['start_ms'])")
play="$tipipe play --endpoint file://$hd --start $hstart --end $((hstart + 60000)) --video-channel 0"
echo "1x replay of 60 s 1080p (free-running clock) against ffmpeg decoding it, one thread, items = frames:"
python3 Benchmarks/compare.py --runs "$runs" --items 1500 --versus ffmpeg \
  tipipe-play "$play --pace fast" \
  ffmpeg "ffmpeg -v error -threads 1 -f h264 -i $hd/video.h264 -f null -"
# Issue 25's figure is 10 of 10 runs: at least 10, whatever RUNS says.
echo "8x replay of 60 s 1080p in real time on one core (taskset -c 0), summary lines:"
for _ in $(seq $((runs > 10 ? runs : 10))); do taskset -c 0 $play --speed 8 --pace realtime | tail -1; done
