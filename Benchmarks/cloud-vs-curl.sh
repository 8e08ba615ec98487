#!/usr/bin/env bash
# The cloud path on loopback, served by `tipipe serve` (release build) from the 720p library of
# export-vs-ffmpeg.sh (AES-128 encrypted, 10 s objects):
#  1. fetch throughput: `tipipe bench fetch` (CloudSegmentSource: list, then download every object into
#     a counting sink) against one `curl` process fetching the same presigned URLs (keep-alive), both
#     with 4 transfers at once, then both with 1;
#  2. export of the whole recording from http:// against the same export from the file:// library.
# Interleaved runs (Benchmarks/compare.py: min/median/max of wall and CPU time of the client process,
# ratio of medians). The server runs throughout and is not counted in either side's CPU.
# Usage: Benchmarks/cloud-vs-curl.sh [minutes]   (default 60; RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
minutes=${1:-60}
runs=${RUNS:-5}
swift build -c release --package-path Benchmarks --product DecodeBenchmark >/dev/null
swift build -c release --product tipipe >/dev/null
bench=$PWD/Benchmarks/.build/release/DecodeBenchmark
tipipe=$PWD/.build/release/tipipe
out=$PWD/Benchmarks/out
mkdir -p "$out"
[ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
library="$out/720p-${minutes}min"
[ -f "$library/index.json" ] || "$bench" extend "$library" "$out/720p" "$minutes" >/dev/null
start=$(python3 -c "import json;print(json.load(open('$library/index.json'))['segments'][0]['start_ms'])")
end=$((start + minutes * 60000))
device=$(python3 -c "import json;print(json.load(open('$library/index.json'))['device_id'])")

"$tipipe" serve --root "$library" --port 0 --url-ttl 86400 --quiet >"$out/serve.out" &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q listening "$out/serve.out" 2>/dev/null && break; sleep 0.1; done
endpoint=$(awk '{print $3}' "$out/serve.out")
token=$("$tipipe" token --device-id "$device" --ttl 86400)
# curl's list of URLs, from the listing (as curl's user would get them).
curl -s --fail -H "Authorization: Bearer $token" "$endpoint/v1/recordings?start_ms=$start&end_ms=$end" |
  python3 -c '
import json, sys
for s in json.load(sys.stdin)["segments"]:
    print("url = \"%s/v1/%s\"\noutput = \"/dev/null\"" % (sys.argv[1], s["url"]))' "$endpoint" >"$out/curl-urls.cfg"
objects=$(grep -c '^url' "$out/curl-urls.cfg")
bytes=$(python3 -c "import json;print(sum(s['size'] for s in json.load(open('$library/index.json'))['segments']))")

echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0 $minutes commit $(git rev-parse --short HEAD)  ($(nproc) cores, $(curl --version | head -1 | cut -d' ' -f1-2), server $endpoint)"
for transfers in 4 1; do
  echo "fetch of $objects objects, $bytes bytes, $transfers transfer(s) at once:"
  python3 Benchmarks/compare.py --runs "$runs" --versus curl \
    tipipe-fetch "$tipipe bench fetch --endpoint $endpoint --token $token --start $start --end $end --transfers $transfers" \
    curl "curl -s --fail --parallel --parallel-max $transfers -K $out/curl-urls.cfg"
done
echo "export of $minutes min 720p, from the server against from the library:"
# Each run writes a new file (as in export-vs-ffmpeg.sh: replacing one makes ext4 write it back at once).
http_export="$tipipe export --endpoint $endpoint --token $token --start $start --end $end --video-channel 0 --audio-channel 1 --out $out/cloud-export.mp4 --quiet"
file_export="$tipipe export --endpoint file://$library --start $start --end $end --video-channel 0 --audio-channel 1 --out $out/local-export.mp4 --quiet"
python3 Benchmarks/compare.py --runs "$runs" --before "rm -f $out/cloud-export.mp4 $out/local-export.mp4; sync" \
  --versus tipipe-file tipipe-http "$http_export" tipipe-file "$file_export"
$http_export
$file_export
cmp "$out/cloud-export.mp4" "$out/local-export.mp4" && echo "the two exports are byte-identical"
rm -f "$out/cloud-export.mp4" "$out/local-export.mp4"
