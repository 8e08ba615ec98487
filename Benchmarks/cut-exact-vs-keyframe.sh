#!/usr/bin/env bash
# The cost of an exact cut: `tipipe export --input FILE --cut exact` (the group of pictures holding the
# start decoded and re-encoded, the rest copied) against `--cut keyframe` (everything copied) on the same
# ordinary 720p H.264 (libx264 defaults: B-frames) + AAC MP4, and against ffmpeg's stream copy from the
# same instant (`-ss S -i FILE -to … -c copy`, which starts at a keyframe too). Interleaved runs
# (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of medians against the keyframe cut).
# Usage: Benchmarks/cut-exact-vs-keyframe.sh [minutes]   (default 60; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
minutes=${1:-60}
runs=${RUNS:-5}
swift build -c release --product tipipe >/dev/null
tipipe=$PWD/.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
base="$out/cut-720p-10min.mp4"
file="$out/cut-720p-${minutes}min.mp4"
# Ten minutes encoded once (libx264 defaults but the preset, so that it takes minutes, not hours), then
# repeated by stream copy.
[ -f "$base" ] || ffmpeg -v error -y -f lavfi -i testsrc2=size=1280x720:rate=25 -f lavfi -i sine=frequency=440 \
  -t 600 -c:v libx264 -preset veryfast -c:a aac "$base"
if [ ! -f "$file" ]; then
  list="$out/cut-list.txt"
  : >"$list"
  for _ in $(seq 1 $(((minutes + 9) / 10))); do echo "file '$PWD/$base'" >>"$list"; done
  ffmpeg -v error -y -f concat -safe 0 -i "$list" -t $((minutes * 60)) -c copy "$file"
fi
# From a point between keyframes a little after the start to a little before the end.
start=7.37
end=$((minutes * 60 - 3)).5
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $minutes  ($(nproc) cores, $(ffmpeg -version | head -1 | cut -d' ' -f1-3))"
python3 Benchmarks/compare.py --runs "$runs" --before sync --versus tipipe-keyframe \
  tipipe-exact "$tipipe export --input $file --start $start --end $end --cut exact --out $out/cut-exact.mp4 --quiet" \
  ffmpeg-copy "ffmpeg -v error -y -ss $start -i $file -to $end -c copy -movflags +faststart $out/cut-ffmpeg.mp4" \
  tipipe-keyframe "$tipipe export --input $file --start $start --end $end --cut keyframe --out $out/cut-keyframe.mp4 --quiet"
for f in cut-exact cut-keyframe cut-ffmpeg; do
  echo "$f: $(ffprobe -v error -select_streams v -show_entries stream=duration -of csv=p=0 "$out/$f.mp4") s of video"
done
rm -f "$out/cut-exact.mp4" "$out/cut-keyframe.mp4" "$out/cut-ffmpeg.mp4"
