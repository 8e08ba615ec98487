#!/usr/bin/env bash
# The test command: installs what is needed, builds with warnings as errors, checks formatting, runs the
# tests, then runs them again under the thread sanitizer, and the media tests under the address sanitizer.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh

echo "== format" >&2
swift format lint --strict --recursive Package.swift Sources Tests Benchmarks Examples

echo "== release build (warnings are errors)" >&2
swift build -c release -Xswiftc -warnings-as-errors

echo "== tests" >&2
swift test -Xswiftc -warnings-as-errors

# The DocC catalog of every library, from the debug build's modules; a warning fails.
echo "== documentation (DocC, warnings are errors)" >&2
modules="$(swift build --show-bin-path)/Modules"
for module in TiCloudStorage TiCloudStorageTesting PipelineGraph Nodes MediaSynthesis PipelineTestKit ReplayTestKit DesktopOutputs TrackRecording; do
  docs=$(mktemp -d)
  # ReplayTestKit is the package's own (not a product): its catalog documents its package symbols.
  level=public
  [ "$module" = ReplayTestKit ] && level=package
  swift-symbolgraph-extract -module-name "$module" -I "$modules" -I Sources/CFFmpeg -I Sources/CCurl \
    -I Sources/CCrypto -I Sources/CMicroHTTPD -I Sources/CArchive -I Sources/CSDL2 -I Sources/LazyLibraries/include -I Sources/MediaKernels/include -target "$(uname -m)-unknown-linux-gnu" \
    -output-dir "$docs" -minimum-access-level "$level"
  docc convert "Sources/$module/Documentation.docc" --additional-symbol-graph-dir "$docs" \
    --output-path "$docs/out" --fallback-display-name "$module" \
    --fallback-bundle-identifier "org.tipipe.$module" --warnings-as-errors
  rm -rf "$docs"
done

# The process tests launch the `tipipe` of the build they belong to, so each sanitized build makes its own.
echo "== tests under the thread sanitizer (the tipipe they launch is sanitized too)" >&2
swift build --sanitize=thread --build-path .build/tsan --product tipipe
swift test --sanitize=thread --build-path .build/tsan

# Memory errors anywhere in the media, export, cloud and fuzz tests; leaks in every tipipe process they launch.
# (The test process itself is not leak-checked: Foundation's Process and the test harnesses keep
# allocations to the end.)
echo "== media, export and fuzz tests under the address and leak sanitizers" >&2
swift build --sanitize=address --build-path .build/asan --product tipipe
# print_suppressions=0: a suppression that matched (scripts/lsan.supp) is no finding, and the tests read the
# children's stderr (a failed command's message must be alone there).
ASAN_OPTIONS="detect_leaks=0:suppressions=$PWD/scripts/asan.supp" TIPIPE_CHILD_ASAN_OPTIONS=detect_leaks=1 \
  LSAN_OPTIONS="suppressions=$PWD/scripts/lsan.supp:print_suppressions=0" \
  swift test --sanitize=address --build-path .build/asan --filter "ExportTests|NodesTests|CloudTests|ReplayTests|SDKTests|RecorderTests"

# A user outside the project's targets: the consumer package builds with no C import, against the
# project by path and against a tagged version of it (a local clone with a tag), its tests pass and its
# program checks what it measured; the README's Swift snippets compile and run.
echo "== consumer package (Examples/LumaDiff), by path and by tag" >&2
if grep -rnE '^\s*(@_implementationOnly |internal |package |public )?import C(FFmpeg|Curl|Crypto)' Examples; then
  echo "the consumer package imports a C module" >&2
  exit 1
fi
swift build --package-path Examples/LumaDiff -Xswiftc -warnings-as-errors
swift test --package-path Examples/LumaDiff -Xswiftc -warnings-as-errors
swift run --package-path Examples/LumaDiff lumadiff
tagged=$(mktemp -d)
trap 'rm -rf "$tagged"' EXIT
git clone -q . "$tagged/tipipe"
git -C "$tagged/tipipe" tag 0.0.1-ci
cp -R Examples/LumaDiff "$tagged/LumaDiff"
rm -rf "$tagged/LumaDiff/.build"
sed -i "s|.package(name: \"tipipe\", path: \"../..\")|.package(url: \"file://$tagged/tipipe\", exact: \"0.0.1-ci\")|" \
  "$tagged/LumaDiff/Package.swift"
grep -q 'exact: "0.0.1-ci"' "$tagged/LumaDiff/Package.swift"
swift run --package-path "$tagged/LumaDiff" lumadiff

# A second consumer: scene changes on decoded pictures decide, in the same pass, which seconds of an
# ordinary file (default libx264, AAC) go into an MP4 cut exactly; its program checks what it found.
echo "== consumer package (Examples/SceneCuts), by path" >&2
swift build --package-path Examples/SceneCuts -Xswiftc -warnings-as-errors
swift test --package-path Examples/SceneCuts -Xswiftc -warnings-as-errors
swift run --package-path Examples/SceneCuts scenecuts

echo "== README snippets" >&2
mkdir -p "$tagged/Snippets/Sources/snippets"
cat > "$tagged/Snippets/Package.swift" <<MANIFEST
// swift-tools-version: 6.0
import PackageDescription
let package = Package(
  name: "Snippets",
  dependencies: [.package(name: "tipipe", path: "$PWD")],
  targets: [
    .executableTarget(
      name: "snippets",
      dependencies: [
        .product(name: "PipelineGraph", package: "tipipe"), .product(name: "PipelineTestKit", package: "tipipe"),
        .product(name: "Nodes", package: "tipipe"), .product(name: "TiCloudStorage", package: "tipipe"),
        .product(name: "TiCloudStorageTesting", package: "tipipe"), .product(name: "MediaSynthesis", package: "tipipe"),
      ])
  ])
MANIFEST
# Every ```swift block of the README, in order, as one program (imports first).
python3 - "$tagged/Snippets/Sources/snippets/main.swift" <<'PY'
import re, sys
text = open("README.md").read()
blocks = re.findall(r"```swift\n(.*?)```", text, re.S)
imports = sorted({line for block in blocks for line in block.splitlines() if line.startswith("import ")})
body = [line for block in blocks for line in block.splitlines() if not line.startswith("import ")]
open(sys.argv[1], "w").write("\n".join(imports + [""] + body) + "\n")
print(f"{len(blocks)} snippet(s)", file=sys.stderr)
PY
swift run --package-path "$tagged/Snippets" snippets
