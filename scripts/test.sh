#!/usr/bin/env bash
# The test command: installs what is needed, builds with warnings as errors, checks formatting, runs the
# tests, then runs them again under the thread sanitizer, and the media tests under the address sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== format" >&2
swift format lint --strict --recursive Package.swift Sources Tests Benchmarks

echo "== release build (warnings are errors)" >&2
swift build -c release -Xswiftc -warnings-as-errors

echo "== tests" >&2
swift test -Xswiftc -warnings-as-errors

# The process tests launch the `tipipe` of the build they belong to, so each sanitized build makes its own.
echo "== tests under the thread sanitizer (the tipipe they launch is sanitized too)" >&2
swift build --sanitize=thread --build-path .build/tsan --product tipipe
swift test --sanitize=thread --build-path .build/tsan

# Memory errors anywhere in the media, export and fuzz tests; leaks in every tipipe process they launch.
# (The test process itself is not leak-checked: Foundation's Process and the test harnesses keep
# allocations to the end.)
echo "== media, export and fuzz tests under the address and leak sanitizers" >&2
swift build --sanitize=address --build-path .build/asan --product tipipe
ASAN_OPTIONS=detect_leaks=0 TIPIPE_CHILD_ASAN_OPTIONS=detect_leaks=1 \
  swift test --sanitize=address --build-path .build/asan --filter "ExportTests|NodesTests"
