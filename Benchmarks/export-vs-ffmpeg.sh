#!/usr/bin/env bash
# Export of a 1-hour 720p H.264 + AAC recording (encrypted and not) from a local library with
# `tipipe export`, against `ffmpeg -i same.ts -c copy out.mp4` over the same media muxed as MPEG-TS,
# same run; prints the time ratio (tipipe ÷ ffmpeg, ≤ 1.0 means tipipe is at least as fast) and peak RSS.
# Usage: Benchmarks/export-vs-ffmpeg.sh [minutes]   (default 60)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
minutes=${1:-60}
swift build -c release --product DecodeBenchmark >/dev/null
swift build -c release --product tipipe >/dev/null
bench=.build/release/DecodeBenchmark
tipipe=.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
[ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
enc="$out/720p-${minutes}min"
plain="$out/720p-${minutes}min-plain"
[ -f "$enc/index.json" ] || "$bench" extend "$enc" "$out/720p" "$minutes" >/dev/null
[ -f "$plain/index.json" ] || "$bench" extend "$plain" "$out/720p" "$minutes" --plain >/dev/null
if [ ! -f "$plain/same.ts" ]; then
  "$bench" elementary "$plain" >/dev/null
  ffmpeg -v error -y -framerate 25 -f h264 -i "$plain/video.h264" -f aac -i "$plain/audio.aac" -c copy "$plain/same.ts"
  rm -f "$plain/video.h264" "$plain/audio.aac"
fi
start=$(python3 -c "import json;print(json.load(open('$plain/index.json'))['segments'][0]['start_ms'])")
end=$((start + minutes * 60000))

measure() {  # prints "seconds maxrss_kb"; flushes earlier runs' dirty pages first so runs don't tax each other
  sync
  /usr/bin/time -f "%e %M" -o /tmp/tipipe-bench-time "$@" >/dev/null 2>&1
  cat /tmp/tipipe-bench-time
}
median() { python3 -c "import sys,statistics; v=[float(x) for x in sys.argv[1:]]; print(statistics.median(v))" "$@"; }

runs=${RUNS:-3}
declare -a ff_s ff_kb plain_s plain_kb enc_s enc_kb
for ((i = 0; i < runs; i++)); do
  read -r s kb < <(measure ffmpeg -v error -y -i "$plain/same.ts" -c copy "$out/ffmpeg-remux.mp4"); ff_s+=("$s"); ff_kb+=("$kb")
  read -r s kb < <(measure "$tipipe" export --endpoint "file://$PWD/$plain" --start "$start" --end "$end" \
    --video-channel 0 --audio-channel 1 --out "$out/tipipe-export.mp4" --quiet); plain_s+=("$s"); plain_kb+=("$kb")
  read -r s kb < <(measure "$tipipe" export --endpoint "file://$PWD/$enc" --start "$start" --end "$end" \
    --video-channel 0 --audio-channel 1 --out "$out/tipipe-export.mp4" --quiet); enc_s+=("$s"); enc_kb+=("$kb")
done
ffmpeg_s=$(median "${ff_s[@]}"); ffmpeg_kb=$(median "${ff_kb[@]}")
for variant in plain enc; do
  eval "times=(\"\${${variant}_s[@]}\")"; eval "sizes=(\"\${${variant}_kb[@]}\")"
  ours_s=$(median "${times[@]}"); ours_kb=$(median "${sizes[@]}")
  python3 -c "
print(f'export ${minutes} min $variant: tipipe {$ours_s:.2f} s, {$ours_kb/1024:.0f} MB peak   ffmpeg -c copy {$ffmpeg_s:.2f} s, {$ffmpeg_kb/1024:.0f} MB peak   time ratio {$ours_s/$ffmpeg_s:.2f}   (medians of $runs)')"
done
ffprobe -v error -show_entries format=duration -of csv=p=0 "$out/tipipe-export.mp4" | sed 's/^/tipipe export duration (s): /'
rm -f "$out/tipipe-export.mp4" "$out/ffmpeg-remux.mp4"
