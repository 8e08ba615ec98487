#!/usr/bin/env bash
# 1080p at 1× in a window on one core: `tipipe play --window` of a 60 s 1920x1080 25 fps H.264 + AAC library
# against ffplay playing an export of the same minute, alternated, each on a virtual display (Xvfb, whose X
# server shares the same core: the whole `xvfb-run` is pinned with `taskset -c 0`), sound through SDL's `disk`
# driver. Per run: wall, CPU (user + sys of the player alone, /usr/bin/time), pictures shown, pictures
# dropped (tipipe's summary `dropped_frames`; ffplay's last `fd=` status) and pictures shown later than a
# frame after their time (tipipe's summary `late_frames`; ffplay does not say). The issue's target: no
# late frame.
# Usage: Benchmarks/window-1080p.sh   (RUNS=5)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh >/dev/null
runs=${RUNS:-5}
swift build -c release --product tipipe >/dev/null
tipipe=$PWD/.build/release/tipipe
out=Benchmarks/out
mkdir -p "$out"
lib="$out/1080p-60s-window"
start=1795996800000
[ -f "$lib/index.json" ] || "$tipipe" synth --out "$lib" --start "$start" --duration 60 --size 1920x1080 --fps 25 \
  --segment-seconds 10 --quiet
file="$out/1080p-60s-window.mp4"
[ -f "$file" ] || "$tipipe" export --endpoint "file://$PWD/$lib" --token t --start "$start" --end $((start + 60000)) \
  --video-channel 0 --audio-channel 1 --out "$file" --cache "$out/cache" --quiet
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $0  commit $(git rev-parse --short HEAD)  ($(nproc) cores, shared machine: noisy)"
echo "# run  player  wall_s  cpu_s  shown  dropped  late"
rows="$work/rows"
: >"$rows"
for run in $(seq "$runs"); do
  SDL_AUDIODRIVER=disk SDL_DISKAUDIOFILE="$work/t.raw" taskset -c 0 xvfb-run -a -s "-screen 0 1280x720x24" \
    /usr/bin/time -f "TIME %e %U %S" -o "$work/t.time" "$tipipe" play --endpoint "file://$PWD/$lib" --token t \
    --start "$start" --end $((start + 60000)) --video-channel 0 --audio-channel 1 --window \
    --cache "$work/cache" >"$work/t.out" 2>/dev/null || true
  read -r _ wall user sys <"$work/t.time"
  summary=$(grep '"event":"summary"' "$work/t.out")
  shown=$(python3 -c "import json,sys;print(json.loads(sys.argv[1])['video_frames'])" "$summary")
  dropped=$(python3 -c "import json,sys;print(json.loads(sys.argv[1])['dropped_frames'])" "$summary")
  late=$(python3 -c "import json,sys;print(json.loads(sys.argv[1])['late_frames'])" "$summary")
  echo "$run tipipe $wall $(python3 -c "print(round($user+$sys,2))") $shown $dropped $late" | tee -a "$rows"
  SDL_AUDIODRIVER=disk SDL_DISKAUDIOFILE="$work/f.raw" taskset -c 0 xvfb-run -a -s "-screen 0 1280x720x24" \
    /usr/bin/time -f "TIME %e %U %S" -o "$work/f.time" ffplay -autoexit -x 960 -y 540 "$file" \
    2>"$work/f.err" >/dev/null || true
  read -r _ wall user sys <"$work/f.time"
  dropped=$(tr '\r' '\n' <"$work/f.err" | grep -o 'fd= *[0-9]*' | tail -1 | tr -dc '0-9')
  echo "$run ffplay $wall $(python3 -c "print(round($user+$sys,2))") - ${dropped:-?} -" | tee -a "$rows"
done
# min / median / max of wall and CPU per player, the dropped and late frames of each run, the ratio of the
# medians.
python3 - "$rows" <<'PY'
import statistics, sys
rows = [line.split() for line in open(sys.argv[1])]
medians = {}
for player in ("tipipe", "ffplay"):
    mine = [r for r in rows if r[1] == player]
    wall = sorted(float(r[2]) for r in mine)
    cpu = sorted(float(r[3]) for r in mine)
    medians[player] = (statistics.median(wall), statistics.median(cpu))
    print(f"{player}: wall {wall[0]:.2f} / {statistics.median(wall):.2f} / {wall[-1]:.2f} s, "
          f"cpu {cpu[0]:.2f} / {statistics.median(cpu):.2f} / {cpu[-1]:.2f} s, "
          f"dropped per run {[r[5] for r in mine]}, late per run {[r[6] for r in mine]}")
t, f = medians["tipipe"], medians["ffplay"]
print(f"tipipe / ffplay, ratio of medians: wall {t[0] / f[0]:.3f}, cpu {t[1] / f[1]:.3f}")
PY
