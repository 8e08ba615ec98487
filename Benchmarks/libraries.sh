# The synthetic libraries the benchmarks read, made once under Benchmarks/out: sourced by each script that
# reads one, so that every script runs by itself on a fresh machine, in any order (run-all.sh's included).
# Needs $bench (the DecodeBenchmark release build) and $out (Benchmarks/out).

# One minute of 720p H.264 + AAC, 10 s objects, 2 s GOPs (encrypted), and its video.h264: $out/720p; the
# longer libraries repeat it.
library_720p_minute() {
  [ -f "$out/720p/index.json" ] || "$bench" synth "$out/720p" 1280x720 60 --encrypt >/dev/null
}

# $out/720p-${1}min (encrypted) and $out/720p-${1}min-plain, the same media plaintext, with same.ts: its
# audio and video muxed as MPEG-TS by ffmpeg (what ffmpeg's side of a comparison reads).
library_720p() {
  library_720p_minute
  local enc="$out/720p-${1}min" plain="$out/720p-${1}min-plain"
  [ -f "$enc/index.json" ] || "$bench" extend "$enc" "$out/720p" "$1" >/dev/null
  [ -f "$plain/index.json" ] || "$bench" extend "$plain" "$out/720p" "$1" --plain >/dev/null
  if [ ! -f "$plain/same.ts" ]; then
    "$bench" elementary "$plain" >/dev/null
    ffmpeg -v error -y -framerate 25 -f h264 -i "$plain/video.h264" -f aac -i "$plain/audio.aac" -c copy "$plain/same.ts"
    rm -f "$plain/video.h264" "$plain/audio.aac"
  fi
}

# One minute of 1080p H.264 + AAC (encrypted) and its video as an elementary stream (video.h264, written
# by synth): $out/1080p.
library_1080p() {
  [ -f "$out/1080p/index.json" ] || "$bench" synth "$out/1080p" 1920x1080 60 --encrypt >/dev/null
}
