#!/usr/bin/env bash
# Long fuzz runs (the tests run a deterministic slice of each in CI):
#   - structure-aware TSEG objects through the reader and the demuxer   (default 1,000,000)
#   - byte-level mutations of TSEG objects through the reader           (default 1,000,000)
#   - index.json documents of every shape                               (default 100,000)
#   - whole exports of libraries with a mutated object                  (default 10,000)
#   - random `tipipe export` command lines, each a process              (default 2,000)
# Usage: scripts/fuzz.sh [SEED]   (environment: READER, BYTES, INDEX, EXPORTS, COMMANDS to change counts)
# Prints one line per run; a crash or a hang (a run over its time limit) fails the script.
set -uo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
seed=${1:-1}
swift build --build-tests -c release >&2 || exit 1
swift build -c release --product tipipe >&2 || exit 1

run() {
  local name=$1 filter=$2 cases=$3 limit=$4
  local started=$SECONDS
  TIPIPE_FUZZ_CASES=$cases TIPIPE_FUZZ_SEED=$seed timeout "$limit" \
    swift test -c release --skip-build --filter "$filter" >"/tmp/tipipe-fuzz-$name.log" 2>&1
  local status=$?
  local verdict=passed
  if ((status == 124)); then verdict="HANG (over $limit)"; elif ((status != 0)); then verdict="FAILED ($status)"; fi
  local detail
  detail=$(grep -hE "^(record|export) fuzz:" "/tmp/tipipe-fuzz-$name.log" | head -1)
  echo "$(date -u +%FT%TZ) seed $seed $name: $cases cases, $((SECONDS - started)) s, $verdict ${detail:+— $detail}"
  ((status == 0)) || failed=1
}

failed=0
run reader "StructuredFuzzTests/records" "${READER:-1000000}" 4h
run bytes "SegmentFormatTests/fuzz" "${BYTES:-1000000}" 4h
run index "StructuredFuzzTests/indexes" "${INDEX:-100000}" 4h
run exports "ExportFuzzTests/exports" "${EXPORTS:-10000}" 8h
run commands "ExportFuzzTests/commandLines" "${COMMANDS:-2000}" 4h
exit $failed
