#!/usr/bin/env bash
# The test command: installs what is needed, builds with warnings as errors, checks formatting, runs the
# tests, then runs them again under the thread sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== format" >&2
swift format lint --strict --recursive Package.swift Sources Tests Benchmarks

echo "== release build (warnings are errors)" >&2
swift build -c release -Xswiftc -warnings-as-errors

echo "== tests" >&2
swift test -Xswiftc -warnings-as-errors

echo "== tests under the thread sanitizer" >&2
swift test --sanitize=thread --build-path .build/tsan
