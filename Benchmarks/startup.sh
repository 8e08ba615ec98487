#!/usr/bin/env bash
# Process start (issue 27, item 2): `tipipe --help` and `tipipe list` over a local library against
# `ffmpeg -version` (the peer's cheapest whole-process command), whole processes, interleaved
# (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of medians against ffmpeg), then the
# shared libraries each loads (what a start pays for before `main`).
# Usage: Benchmarks/startup.sh   (RUNS=20: a start is short, so more runs than the other scripts)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
runs=${RUNS:-20}
swift build -c release --package-path Benchmarks --product DecodeBenchmark >/dev/null
swift build -c release --product tipipe >/dev/null
bench=$PWD/Benchmarks/.build/release/DecodeBenchmark
tipipe=$PWD/.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
[ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
start=$(python3 -c "import json;print(json.load(open('$out/720p/index.json'))['segments'][0]['start_ms'])")
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0  commit $(git rev-parse --short HEAD)  ($(nproc) cores, shared machine: noisy; $(ffmpeg -version | head -1 | cut -d' ' -f1-3))"
python3 Benchmarks/compare.py --runs "$runs" --versus ffmpeg-version \
  tipipe-help "$tipipe --help" \
  tipipe-list "$tipipe list --endpoint file://$PWD/$out/720p --token t --start $start --end $((start + 60000))" \
  ffmpeg-version "ffmpeg -version"
for command in "$tipipe" "$(command -v ffmpeg)"; do
  echo "shared libraries loaded by $(basename "$command"): $(ldd "$command" | grep -c '=>')"
done
