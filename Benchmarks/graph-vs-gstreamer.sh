#!/usr/bin/env bash
# Items per second through source → 4 pass-through nodes → sink, tipipe against GStreamer, whole
# processes, interleaved (Benchmarks/compare.py: min/median/max of wall and CPU time, ratio of medians).
#   one thread:           GraphBenchmark chain     vs  fakesrc ! identity ×4 ! fakesink
#   one thread boundary:  GraphBenchmark boundary  vs  fakesrc ! identity ×2 ! queue ! identity ×2 ! fakesink
# Usage: Benchmarks/graph-vs-gstreamer.sh [items]   (default 3,000,000; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
items=${1:-3000000}
runs=${RUNS:-5}
swift build -c release --package-path Benchmarks --product GraphBenchmark >/dev/null
bench=$PWD/Benchmarks/.build/release/GraphBenchmark
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $items commit $(git rev-parse --short HEAD)  ($(nproc) cores, $(gst-launch-1.0 --version | sed -n 2p))"
echo "one thread (items/s = items / median wall time of the whole process):"
python3 Benchmarks/compare.py --runs "$runs" --items "$items" \
  tipipe "$bench chain $items" \
  gstreamer "gst-launch-1.0 -q fakesrc num-buffers=$items ! identity ! identity ! identity ! identity ! fakesink"
echo "two threads:"
python3 Benchmarks/compare.py --runs "$runs" --items "$items" \
  tipipe "$bench boundary $items" \
  gstreamer "gst-launch-1.0 -q fakesrc num-buffers=$items ! identity ! identity ! queue max-size-buffers=1024 ! identity ! identity ! fakesink"
