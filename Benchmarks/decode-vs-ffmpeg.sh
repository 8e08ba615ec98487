#!/usr/bin/env bash
# Decode throughput through the graph (`tipipe bench decode`: CloudSegmentSource over file:// → Verify/Decrypt → Demux →
# FrameDecoder → count) against `ffmpeg -threads N -f h264 -i video.h264 -f null -` over exactly the
# library's access units,
# whole processes, interleaved (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of
# medians); then verify+decrypt+demux alone on a 60-minute library against reading its objects
# (`cat objects/* >/dev/null`, the floor of any reader).
# Usage: Benchmarks/decode-vs-ffmpeg.sh   (RUNS=5)
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
. Benchmarks/libraries.sh
library_720p_minute
library_1080p
[ -f "$out/720p-60min/index.json" ] || "$bench" extend "$out/720p-60min" "$out/720p" 60 >/dev/null

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 commit $(git rev-parse --short HEAD)  ($(nproc) cores, $(ffmpeg -version | head -1 | cut -d' ' -f1-3))"
for size in 720p 1080p; do
  start=$(python3 -c "import json;print(json.load(open('$out/$size/index.json'))['segments'][0]['start_ms'])")
  range="--endpoint file://$PWD/$out/$size --start $start --end $((start + 60000)) --video-channel 0"
  frames=$("$tipipe" bench decode $range --json | python3 -c "import json,sys;print(json.load(sys.stdin)['frames'])")
  for threads in 1 2; do
    echo "decode $size (60 s, encrypted), $threads thread(s), items = frames:"
    python3 Benchmarks/compare.py --runs "$runs" --items "$frames" \
      tipipe "$tipipe bench decode $range --threads $threads" \
      ffmpeg "ffmpeg -v error -threads $threads -f h264 -i $out/$size/video.h264 -f null -"
  done
done
# H.265 from a library, then both codecs from an MPEG-TS file (`bench decode --input`: MediaFileSource,
# libavformat's demuxer, as ffmpeg reads it), 720p, 60 s, the same pictures as the elementary streams.
h265="$out/720p-h265"
[ -f "$h265/index.json" ] || "$tipipe" synth --out "$h265" --start 1795996800000 --duration 60 --segment-seconds 10 \
  --size 1280x720 --video h265 --audio none --encrypt --quiet
[ -f "$h265/video.h264" ] || "$bench" elementary "$h265" >/dev/null
[ -f "$out/720p/video.ts" ] || ffmpeg -v error -y -framerate 25 -f h264 -i "$out/720p/video.h264" -c copy "$out/720p/video.ts"
[ -f "$h265/video.ts" ] || ffmpeg -v error -y -framerate 25 -f hevc -i "$h265/video.h264" -c copy "$h265/video.ts"
start=$(python3 -c "import json;print(json.load(open('$h265/index.json'))['segments'][0]['start_ms'])")
range="--endpoint file://$PWD/$h265 --start $start --end $((start + 60000)) --video-channel 0"
frames=$("$tipipe" bench decode $range --json | python3 -c "import json,sys;print(json.load(sys.stdin)['frames'])")
for threads in 1 2; do
  echo "decode 720p H.265 (60 s, encrypted), $threads thread(s), items = frames:"
  python3 Benchmarks/compare.py --runs "$runs" --items "$frames" \
    tipipe "$tipipe bench decode $range --threads $threads" \
    ffmpeg "ffmpeg -v error -threads $threads -f hevc -i $h265/video.h264 -f null -"
  for file in "$out/720p/video.ts" "$h265/video.ts"; do
    echo "decode $file (720p, 60 s), $threads thread(s), items = frames:"
    python3 Benchmarks/compare.py --runs "$runs" --items "$frames" \
      tipipe "$tipipe bench decode --input $file --threads $threads" \
      ffmpeg "ffmpeg -v error -threads $threads -i $file -f null -"
  done
done
# The issue-9 target: a 5-minute 720p library, whole process, one thread and default threading each.
[ -f "$out/720p-5min/index.json" ] || "$bench" extend "$out/720p-5min" "$out/720p" 5 >/dev/null
[ -f "$out/720p-5min/video.h264" ] || "$bench" elementary "$out/720p-5min" >/dev/null
start=$(python3 -c "import json;print(json.load(open('$out/720p-5min/index.json'))['segments'][0]['start_ms'])")
range="--endpoint file://$PWD/$out/720p-5min --start $start --end $((start + 300000)) --video-channel 0"
frames=$("$tipipe" bench decode $range --threads 1 --json | python3 -c "import json,sys;print(json.load(sys.stdin)['frames'])")
echo "decode 720p, 5 min (encrypted), one thread, items = frames:"
python3 Benchmarks/compare.py --runs "$runs" --items "$frames" \
  tipipe "$tipipe bench decode $range --threads 1" \
  ffmpeg "ffmpeg -v error -threads 1 -f h264 -i $out/720p-5min/video.h264 -f null -"
echo "decode 720p, 5 min (encrypted), default threads (tipipe: one per core; ffmpeg: its own choice):"
python3 Benchmarks/compare.py --runs "$runs" --items "$frames" \
  tipipe "$tipipe bench decode $range" \
  ffmpeg "ffmpeg -v error -f h264 -i $out/720p-5min/video.h264 -f null -"

bytes=$(du -sb "$out/720p-60min/objects" | cut -f1)
echo "verify+decrypt+demux of 60 min 720p encrypted ($bytes bytes of objects), against reading them:"
python3 Benchmarks/compare.py --runs "$runs" --items "$bytes" \
  tipipe-demux "$bench demux $out/720p-60min" \
  cat "cat $out/720p-60min/objects/* >/dev/null"
