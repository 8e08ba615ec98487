#!/usr/bin/env bash
# Decode throughput through the graph (LocalLibrarySource → Verify/Decrypt → Demux → Decoder → null)
# against `ffmpeg -threads N -i same_media -f null -`, same content (the library's access units as an
# Annex B stream), same run; then verify+decrypt+demux alone on a 60-minute library, and peak RSS
# against recording length. Usage: Benchmarks/decode-vs-ffmpeg.sh
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
swift build -c release --product DecodeBenchmark >/dev/null
bench=.build/release/DecodeBenchmark
out=Benchmarks/out
mkdir -p "$out"
[ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
[ -f "$out/1080p/index.json" ] || "$bench" synth "$out/1080p" 1920x1080 60 --encrypt >/dev/null
[ -f "$out/720p-10min/index.json" ] || "$bench" extend "$out/720p-10min" "$out/720p" 10 >/dev/null
[ -f "$out/720p-60min/index.json" ] || "$bench" extend "$out/720p-60min" "$out/720p" 60 >/dev/null

field() { sed -E "s/.*$1=([0-9.]+).*/\1/"; }
ffmpeg_seconds() {
  local start end
  start=$(date +%s.%N)
  ffmpeg -v error -threads "$2" -f h264 -i "$1/video.h264" -f null -
  end=$(date +%s.%N)
  python3 -c "print($end - $start)"
}

for size in 720p 1080p; do
  for threads in 1 2; do
    line=$("$bench" decode "$out/$size" "$threads" 2>/dev/null)
    frames=$(echo "$line" | field frames)
    ours=$(echo "$line" | field seconds)
    theirs=$(ffmpeg_seconds "$out/$size" "$threads")
    python3 -c "
f=$frames; o=$ours; t=$theirs
print(f'decode $size, $threads thread(s): tipipe {f/o:7.0f} fps   ffmpeg {f/t:7.0f} fps   ratio {t/o:.2f}')"
  done
done

line=$("$bench" demux "$out/720p-60min" 2>/dev/null)
python3 -c "
b=$(echo "$line" | field bytes); s=$(echo "$line" | field seconds)
print(f'verify+decrypt+demux, 60 min 720p encrypted: {b/1e9:.2f} GB in {s:.2f} s = {b/s/1e9:.2f} GB/s')"

for library in 720p 720p-10min 720p-60min; do
  echo "peak RSS, demux $library: $("$bench" demux "$out/$library" 2>/dev/null | field maxrss_kb) KB"
done
for library in 720p 720p-10min; do
  echo "peak RSS, decode $library: $("$bench" decode "$out/$library" 1 2>/dev/null | field maxrss_kb) KB"
done
