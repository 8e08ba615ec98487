#!/usr/bin/env bash
# Recording decoded media (seed 003's TrackRecorder, `tipipe record`) against ffmpeg doing the same work:
# a 720p30 file with AAC sound decoded, brought to 20 fps 1280x720, encoded with libx264 veryfast (CRF 23)
# and AAC, written as MP4:
#   tipipe record --input in.mp4 --name N --fps 20 --size 1280x720
#   ffmpeg -i in.mp4 -r 20 -s 1280x720 -c:v libx264 -preset veryfast -crf 23 -c:a aac out.mp4
# then four recorders of the same tracks (`--recorders 4`) against one. Whole processes, interleaved
# (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of medians).
# Usage: Benchmarks/record-vs-ffmpeg.sh [seconds]   (default 60; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
seconds=${1:-60}
runs=${RUNS:-5}
swift build -c release --product tipipe >/dev/null
tipipe=$PWD/.build/release/tipipe
out=$PWD/Benchmarks/out/record
mkdir -p "$out"
input="$out/in-${seconds}s.mp4"
[ -f "$input" ] || ffmpeg -v error -f lavfi -i "testsrc2=size=1280x720:rate=30" -f lavfi \
  -i "sine=frequency=440:sample_rate=48000" -t "$seconds" -c:v libx264 -preset veryfast -c:a aac "$input"
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $seconds  ($(nproc) cores, $(ffmpeg -version | head -1 | cut -d' ' -f1-3), commit $(git rev-parse --short HEAD))"
echo "record $seconds s of 720p30 + AAC into 720p20 H.264 veryfast + AAC (items = seconds of media):"
python3 Benchmarks/compare.py --runs "$runs" --items "$seconds" --before "rm -rf $out/root $out/ffmpeg.mp4" \
  tipipe "$tipipe record --input $input --name bench --fps 20 --size 1280x720 --data-root $out/root" \
  ffmpeg "ffmpeg -v error -y -i $input -r 20 -s 1280x720 -c:v libx264 -preset veryfast -crf 23 -c:a aac $out/ffmpeg.mp4"
echo "four recorders of one track against one:"
python3 Benchmarks/compare.py --runs "$runs" --items "$seconds" --before "rm -rf $out/root" \
  four "$tipipe record --input $input --name bench --recorders 4 --data-root $out/root" \
  one "$tipipe record --input $input --name bench --data-root $out/root"
