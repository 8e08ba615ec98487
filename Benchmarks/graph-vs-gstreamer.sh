#!/usr/bin/env bash
# Items per second through source → 4 pass-through nodes → sink, tipipe against GStreamer, same run.
#   one thread:           GraphBenchmark chain     vs  fakesrc ! identity ×4 ! fakesink
#   one thread boundary:  GraphBenchmark boundary  vs  fakesrc ! identity ×2 ! queue ! identity ×2 ! fakesink
# Usage: Benchmarks/graph-vs-gstreamer.sh [items]   (default 5,000,000)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
items=${1:-5000000}
swift build -c release --product GraphBenchmark >/dev/null

rate_of_tipipe() { .build/release/GraphBenchmark "$1" "$items" | sed -E 's/.*= ([0-9]+) items\/s/\1/'; }
rate_of_gst() {
  local start end
  start=$(date +%s.%N)
  gst-launch-1.0 -q $1 >/dev/null
  end=$(date +%s.%N)
  python3 -c "print(round($items / ($end - $start)))"
}

chain_gst="fakesrc num-buffers=$items ! identity ! identity ! identity ! identity ! fakesink"
queue_gst="fakesrc num-buffers=$items ! identity ! identity ! queue max-size-buffers=1024 ! identity ! identity ! fakesink"

ours=$(rate_of_tipipe chain); theirs=$(rate_of_gst "$chain_gst")
printf 'one thread:    tipipe %10d items/s   GStreamer %10d buffers/s   ratio %.2f\n' "$ours" "$theirs" \
  "$(python3 -c "print($ours / $theirs)")"
ours=$(rate_of_tipipe boundary); theirs=$(rate_of_gst "$queue_gst")
printf 'two threads:   tipipe %10d items/s   GStreamer %10d buffers/s   ratio %.2f\n' "$ours" "$theirs" \
  "$(python3 -c "print($ours / $theirs)")"
