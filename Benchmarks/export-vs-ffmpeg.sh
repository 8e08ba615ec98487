#!/usr/bin/env bash
# Export of a whole 720p H.264 + AAC recording from a local library (plaintext and encrypted) with
# `tipipe export`, against ffmpeg stream-copying the same media muxed as MPEG-TS, with and without
# `-movflags +faststart` (tipipe's output has its index at the front, like faststart's), then the same
# on one pinned core (`taskset -c 0`). Interleaved runs (Benchmarks/compare.py: min/median/max of wall
# and CPU time, ratio of medians against ffmpeg with faststart). Before each run the outputs are removed
# and `sync` runs: replacing an existing file makes ext4 start writing the new one back at once
# (`auto_da_alloc`: at tipipe's rename, at ffmpeg's close after O_TRUNC), a cost of the file system
# that both would pay and that varies with the disk; each run writes a new file.
# Usage: Benchmarks/export-vs-ffmpeg.sh [minutes]   (default 60; RUNS=5)
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
enc="$out/720p-${minutes}min"
plain="$out/720p-${minutes}min-plain"
start=$(python3 -c "import json;print(json.load(open('$plain/index.json'))['segments'][0]['start_ms'])")
end=$((start + minutes * 60000))
export_from() {
  echo "$1 $tipipe export --endpoint file://$PWD/$2 --start $start --end $end --video-channel 0 --audio-channel 1 --out $out/tipipe-export.mp4 --quiet"
}

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $minutes  commit $(git rev-parse --short HEAD)  ($(nproc) cores, shared machine: noisy; $(ffmpeg -version | head -1 | cut -d' ' -f1-3))"
for pin in "" "taskset -c 0"; do
  echo "export of $minutes min 720p${pin:+, one core ($pin)}:"
  python3 Benchmarks/compare.py --runs "$runs" --before "rm -f $out/tipipe-export.mp4 $out/ffmpeg-remux.mp4; sync" --versus ffmpeg-faststart \
    tipipe-plain "$(export_from "$pin" "$plain")" \
    tipipe-encrypted "$(export_from "$pin" "$enc")" \
    ffmpeg "$pin ffmpeg -v error -y -i $plain/same.ts -c copy $out/ffmpeg-remux.mp4" \
    ffmpeg-faststart "$pin ffmpeg -v error -y -i $plain/same.ts -c copy -movflags +faststart $out/ffmpeg-remux.mp4"
done
"$tipipe" export --endpoint "file://$PWD/$plain" --start "$start" --end "$end" --video-channel 0 --audio-channel 1 --out "$out/tipipe-export.mp4" --quiet
ffprobe -v error -show_entries format=duration -of csv=p=0 "$out/tipipe-export.mp4" | sed 's/^/tipipe export duration (s): /'
rm -f "$out/tipipe-export.mp4" "$out/ffmpeg-remux.mp4"
