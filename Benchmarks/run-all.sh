#!/usr/bin/env bash
# Every comparison with a peer, one after the other (issue 27, item 6): process start, export (30 and 60
# minutes, plaintext and encrypted, both cores and one), snapshot, seek, 8× and 1× replay (10- and
# 60-minute libraries), decode, cloud fetch and export, and the graph engine against GStreamer. Each script
# alternates its commands (Benchmarks/compare.py: ≥ 5 runs, min/median/max of wall and CPU, median peak
# RSS, the exact commands printed). Everything goes into one dated results file named after the commit it
# measured (`+changes` when the tree differs from it), followed by a table of every ratio of medians, the
# table Benchmarks/README.md quotes.
# Usage: Benchmarks/run-all.sh   (RUNS=N passes N to every script; by default each keeps its own)
set -euo pipefail
cd "$(dirname "$0")/.."
commit=$(git rev-parse --short HEAD)
git diff --quiet HEAD -- Sources Package.swift || commit="$commit+changes"
stamp=$(date -u +%Y-%m-%dT%H:%MZ)
results="Benchmarks/results/${stamp%%T*}-run-all-${commit}.txt"
mkdir -p Benchmarks/results

section() {
  echo
  echo "## $*"
  "$@"
}

{
  echo "# $stamp Benchmarks/run-all.sh  commit $commit  ($(nproc) cores, shared machine: noisy)"
  section Benchmarks/startup.sh
  section Benchmarks/export-vs-ffmpeg.sh 30
  section Benchmarks/export-vs-ffmpeg.sh 60
  section Benchmarks/replay-vs-ffmpeg.sh 10
  section Benchmarks/replay-vs-ffmpeg.sh 60
  section Benchmarks/decode-vs-ffmpeg.sh
  section Benchmarks/cloud-vs-curl.sh
  section Benchmarks/graph-vs-gstreamer.sh
} 2>&1 | tee "$results"

# The table: each ratio of medians under the script and the part of it that printed it.
{
  echo
  echo "## Ratios of medians (below 1.0 tipipe is cheaper), commit $commit"
  echo
  echo "| script | part | ratio |"
  echo "| --- | --- | --- |"
  awk '
    function replays() {
      if (runs > 0) printf "| %s | %s | %d of %d runs without a late or dropped picture |\n", script, replay, clean, runs
      runs = 0; clean = 0
    }
    /^## Benchmarks\// { replays(); script = substr($0, 4); part = ""; next }
    /^[^ #{].*:$/ { part = substr($0, 1, length($0) - 1); if (part ~ /^8x/) replay = part; next }
    /ratio of medians/ { sub(/^ +ratio of medians /, ""); printf "| %s | %s | %s |\n", script, part, $0 }
    /seeks: first frame after/ { printf "| %s | %s | %s |\n", script, part, $0 }
    /"event":"summary"/ { runs++; if ($0 ~ /"dropped_frames":0,"late_frames":0/) clean++ }
    END { replays() }
  ' "$results"
} | tee -a "$results"
echo "results: $results"
