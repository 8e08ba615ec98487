#!/usr/bin/env bash
# Whether an export's memory and time stay flat in its length (issue 27: a 10-hour export's peak RSS at
# most 1.05x a 1-hour one's, its time at most 10.5x): `tipipe export` of the first HOURS hours of a
# library against the first hour of the same library, whole processes, alternated (Benchmarks/compare.py;
# the output removed and `sync` before each run). The 24-hour encrypted 720p library (25 GB) is made
# once, as Benchmarks/thumbnails.sh makes it (`DecodeBenchmark extend`, from decode-vs-ffmpeg.sh's 720p
# library); a 10-hour export writes 11 GB, more than the page cache holds here.
# Usage: Benchmarks/export-long.sh [hours]   (default 10; RUNS=5; LIBRARY=Benchmarks/out/720p-1440min)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
hours=${1:-10}
runs=${RUNS:-5}
library=$PWD/${LIBRARY:-Benchmarks/out/720p-1440min}
swift build -c release --product tipipe >/dev/null
if [ ! -f "$library/index.json" ]; then
  [ -f Benchmarks/out/720p/index.json ] || { echo "run Benchmarks/decode-vs-ffmpeg.sh first" >&2; exit 1; }
  swift build -c release --package-path Benchmarks --product DecodeBenchmark >/dev/null
  Benchmarks/.build/release/DecodeBenchmark extend "$library" Benchmarks/out/720p 1440 >/dev/null
fi
tipipe=$PWD/.build/release/tipipe
out=$PWD/Benchmarks/out/export-long.mp4
start=$(python3 -c "import json;print(json.load(open('$library/index.json'))['segments'][0]['start_ms'])")
export_of() { echo "$tipipe export --endpoint file://$library --start $start --end $((start + $1 * 3600000)) --video-channel 0 --audio-channel 1 --out $out --quiet"; }
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $hours commit $(git rev-parse --short HEAD)$(git diff --quiet HEAD || echo +changes)  ($(nproc) cores, shared machine)"
echo "export of the first $hours h of $(basename "$library") against its first hour:"
python3 Benchmarks/compare.py --runs "$runs" --versus 1h --before "rm -f $out; sync" \
  "${hours}h" "$(export_of "$hours")" 1h "$(export_of 1)"
ffprobe -v error -show_entries format=duration -of csv=p=0 "$out" | sed 's/^/duration of the last output (1 h): /'
rm -f "$out"
