/// `GET /player`: a page that plays a device's recordings in a browser, from this server's own API — the
/// listing for the timeline (recorded ranges and gaps), `/hls/index.m3u8` for the media (its fMP4
/// fragments appended to a Media Source Extensions buffer by a loader of its own: no JavaScript library
/// can be installed here) and `/thumbnails` for previews on hover. The buffer is opened with the codecs
/// read from the init section (RFC 6381, H.265's from its `hvcC`); a codec the browser cannot decode (H.265
/// in most) is an error naming it, and the page links the presigned playlist for a player that can (VLC,
/// ffplay, Safari). The clock shows the range's first recorded instant from the playlist on.
///
/// What to play comes in the URL's fragment, which a browser never sends (so no token reaches a log):
/// `/player#token=T&start=S&end=E&channel=N[&audio=M][&every=SECONDS]`. The page holds no data of its
/// own; it is the same for every request. Test hooks (`&test=1&seek=WALL_MS&rate=R`) make it seek, play
/// and report through `console.log` lines starting `tipipe-player` (`&from=start` plays from the range's
/// start, else from 2 s before the first gap); `&bench=N` times N click-seeks.
enum PlayerPage {
  /// The page.
  static let html = #"""
    <!doctype html>
    <html lang="en"><head><meta charset="utf-8"><title>tipipe player</title>
    <style>
    body{font:14px system-ui,sans-serif;margin:0;background:#111;color:#eee}
    #stage{position:relative;max-width:960px;margin:12px auto}
    video{width:100%;background:#000;display:block}
    #bar{position:relative;height:28px;background:#333;margin-top:6px;cursor:pointer}
    .range{position:absolute;top:0;height:100%;background:#3a7}
    #head{position:absolute;top:-3px;width:2px;height:34px;background:#fff}
    #tip{position:absolute;bottom:34px;display:none;background:#000;border:1px solid #666}
    #tip div{background-repeat:no-repeat}
    #controls{display:flex;gap:6px;align-items:center;margin-top:6px}
    button{background:#222;color:#eee;border:1px solid #555;padding:3px 8px}
    button.on{background:#3a7;color:#000}
    #error{color:#f66;font-weight:bold;margin-top:8px}
    a{color:#8cf;margin-left:auto}
    </style></head><body><div id="stage">
    <video id="video" muted playsinline></video>
    <div id="bar"><div id="head"></div><div id="tip"><div id="tile"></div><span id="tiptime"></span></div></div>
    <div id="controls"><button id="play">play</button><span id="speeds"></span><span id="clock">--:--:--</span><a id="hls" title="for VLC, ffplay or Safari"></a></div>
    <div id="error" role="alert"></div>
    </div><script>
    "use strict";
    const p = new URLSearchParams(location.hash.slice(1));
    const token = p.get("token") || "", start = Number(p.get("start")), end = Number(p.get("end"));
    const channel = p.get("channel") || "0", audio = p.get("audio");
    const test = p.get("test") === "1", bench = Number(p.get("bench") || "0");
    const video = document.getElementById("video"), bar = document.getElementById("bar");
    const log = (line) => { if (test) console.log("tipipe-player " + line); };
    const auth = { headers: { Authorization: "Bearer " + token } };
    let runs = [], segments = [], ranges = [], duration = 0;

    function fail(text) {
      document.getElementById("error").textContent = text;
      log("error " + text);
      if (bench > 0) console.log("tipipe-player error " + text);
      if (test || bench > 0) setTimeout(() => window.close(), 50);
    }
    async function json(response) { try { return await response.json(); } catch (e) { return {}; } }

    // The recorded ranges of [start, end) from the listing: objects that touch are one range.
    async function listing() {
      const r = await fetch(`/v1/recordings?start_ms=${start}&end_ms=${end}`, auth);
      if (!r.ok) { const body = await json(r); throw new Error(`${r.status} ${body.error || ""}: ${body.message || ""}`); }
      const body = await r.json();
      for (const s of body.segments) {
        const a = Math.max(s.start_ms, start), b = Math.min(s.end_ms, end);
        if (b <= a) continue;
        const last = ranges[ranges.length - 1];
        if (last && a <= last[1]) last[1] = Math.max(last[1], b); else ranges.push([a, b]);
      }
    }

    // The playlist: runs of contiguous segments, each run with its wall clock; each segment with its init
    // section (a run may change its picture size or audio rate from one object to the next).
    async function playlist() {
      const q = `start_ms=${start}&end_ms=${end}&channel=${channel}` + (audio !== null ? `&audio_channel=${audio}` : "");
      // Each segment's own init section (`maps=each`): the loader appends one only when it differs.
      const r = await fetch(`/hls/index.m3u8?${q}&maps=each`, auth);
      if (!r.ok) { const body = await json(r); throw new Error(`${r.status} ${body.error || ""}: ${body.message || ""}`); }
      // The same playlist for players that speak HLS (VLC, ffplay, Safari): presigned, no token in it.
      const presigned = r.headers.get("X-Presigned-URL");
      if (presigned) {
        const a = document.getElementById("hls");
        a.href = "/hls/" + presigned;
        a.textContent = "HLS playlist";
      }
      let run = null, init = null, length = 0, media = 0;
      for (const line of (await r.text()).split("\n")) {
        if (line.startsWith("#EXT-X-PROGRAM-DATE-TIME:")) { run = { wall: Date.parse(line.slice(25)), media, segments: [] }; runs.push(run); }
        else if (line.startsWith("#EXT-X-MAP:URI=")) init = line.slice(16, -1);
        else if (line.startsWith("#EXTINF:")) length = parseFloat(line.slice(8));
        else if (line && !line.startsWith("#")) {
          const s = { uri: line, init, media, length, run: runs.length - 1 };
          run.segments.push(s); segments.push(s); media += length;
        }
      }
      duration = media;
    }

    // Media time <-> wall clock (the stream closes gaps up; each run keeps its wall clock).
    function wallOf(t) {
      let run = runs[0];
      for (const r of runs) if (t >= r.media) run = r;
      return run.wall + (t - run.media) * 1000;
    }
    function mediaOf(wall) {
      for (const r of runs) {
        const length = r.segments.reduce((n, s) => n + s.length, 0);
        if (wall < r.wall) return r.media;  // in a gap: the next recording
        if (wall < r.wall + length * 1000) return r.media + (wall - r.wall) / 1000;
      }
      return duration;
    }

    // Codecs from the init section (RFC 6381): avcC gives the H.264 profile, constraints and level;
    // hvcC the H.265 profile space, profile, compatibility flags (bit-reversed), tier, level and
    // constraint bytes (trailing zero bytes left out), as ISO/IEC 14496-15 annex E writes them; mp4a
    // says AAC.
    function codecs(bytes) {
      const find = (tag) => { for (let i = 0; i + 4 < bytes.length; i++) if (String.fromCharCode(...bytes.subarray(i, i + 4)) === tag) return i; return -1; };
      const hex = (n) => n.toString(16).toUpperCase();
      const list = [];
      const avc = find("avcC"), hvc = find("hvcC");
      if (avc >= 0) list.push("avc1." + [1, 2, 3].map((k) => bytes[avc + 4 + k].toString(16).padStart(2, "0")).join(""));
      else if (hvc >= 0) {
        const c = hvc + 4, space = bytes[c + 1] >> 6, tier = (bytes[c + 1] >> 5) & 1, profile = bytes[c + 1] & 31;
        let flags = 0;
        for (let k = 0; k < 4; k++) flags = flags * 256 + bytes[c + 2 + k];
        let reversed = 0;
        for (let bit = 0; bit < 32; bit++) reversed = reversed * 2 + (Math.floor(flags / 2 ** bit) & 1);
        const constraints = Array.from(bytes.subarray(c + 6, c + 12));
        while (constraints.length && constraints[constraints.length - 1] === 0) constraints.pop();
        const entry = find("hev1") >= 0 ? "hev1" : "hvc1";
        list.push([`${entry}.${["", "A", "B", "C"][space]}${profile}`, hex(reversed), `${tier ? "H" : "L"}${bytes[c + 12]}`,
          ...constraints.map(hex)].join("."));
      }
      if (find("mp4a") >= 0) list.push("mp4a.40.2");
      return `video/mp4; codecs="${list.join(", ")}"`;
    }

    // The loader: appends segments in order from `next`, each preceded by its init section when that
    // differs from the last one appended (a new codec changes the buffer's type), keeping 30 s ahead and
    // 30 s behind. A seek starts a new generation: what the old one fetched or appended no longer moves
    // the loader, and its fetches are aborted.
    let source, buffer, bufferType, next = 0, appendedInit = null, loading = false, generation = 0, seekSegment = 0;
    const same = (a, b) => a && b && a.length === b.length && a.every((byte, i) => byte === b[i]);
    let controller = new AbortController();
    async function get(uri, signal) {
      for (let attempt = 0; ; attempt++) {
        const r = await fetch(`/hls/${uri}`, { signal });
        if (r.ok) return new Uint8Array(await r.arrayBuffer());
        // The server makes two segments at a time, and one segment once, and says so (503, 429): wait and
        // ask again, for up to ~15 s.
        if ((r.status === 503 || r.status === 429) && attempt < 32) {
          await new Promise((resolve) => setTimeout(resolve, Math.min(100 * (attempt + 1), 500)));
          continue;
        }
        throw new Error(`${r.status} ${(await json(r)).error || ""}`);
      }
    }
    function whenIdle() {
      return buffer.updating ? new Promise((resolve) => buffer.addEventListener("updateend", resolve, { once: true })) : Promise.resolve();
    }
    function append(bytes) {
      return new Promise((resolve, reject) => {
        const done = () => { buffer.removeEventListener("error", failed); resolve(); };
        const failed = () => { buffer.removeEventListener("updateend", done); reject(new Error("the browser refused a segment")); };
        buffer.addEventListener("updateend", done, { once: true });
        buffer.addEventListener("error", failed, { once: true });
        buffer.appendBuffer(bytes);
      });
    }
    async function trim() {
      const before = video.currentTime - 30;
      if (before > 0 && video.buffered.length && video.buffered.start(0) < before) {
        await whenIdle();
        buffer.remove(0, before);
        await whenIdle();
      }
    }
    async function pump() {
      if (loading) return;
      loading = true;
      const mine = generation, signal = controller.signal;
      try {
        while (mine === generation && next < segments.length && segments[next].media < video.currentTime + 30) {
          const s = segments[next], index = next;
          const init = await get(s.init, signal);
          if (mine !== generation) break;
          // A buffer keeps its number of tracks: a section with another (an object without sound in a run
          // with sound) is not appended, and that segment's media is appended as it is (its video keeps
          // track 1; the sound's hole is jumped as at a gap). Not handled: a run that gains a track.
          const fresh = !same(init, appendedInit), type = fresh ? codecs(init) : bufferType;
          if (fresh && type.split(",").length === bufferType.split(",").length) {
            await whenIdle();
            if (mine !== generation) break;
            // Another codec (not another level of one) changes the buffer's type.
            const family = (t) => t.replace(/\.[^,"]*/g, "");
            if (family(type) !== family(bufferType)) buffer.changeType(type);
            bufferType = type;
            await append(init);
            if (mine !== generation) break;
            appendedInit = init;
          }
          const bytes = await get(s.uri, signal);
          if (mine !== generation) break;
          await trim();
          await whenIdle();
          await append(bytes);
          if (mine !== generation) break;
          next = index + 1;
          // A seek into a hole (before a run's first keyframe) lands on what follows it, once the segment
          // that should have held it is in.
          if (video.seeking && index >= seekSegment) jumpHole();
        }
        if (mine === generation && next === segments.length && source.readyState === "open") {
          await whenIdle();
          if (mine === generation && source.readyState === "open") source.endOfStream();
        }
      } catch (e) {
        // An aborted fetch is a seek's or the page's own doing, never a failure of the stream.
        if (mine === generation && e.name !== "AbortError") fail("the stream failed: " + e.message);
      }
      loading = false;
      if (mine !== generation) pump();
    }

    // A seek: from the segment that holds the time (and the one before it in its run, which may hold
    // its GOP's keyframe), unless what is buffered already holds it.
    function seekMedia(t) {
      t = Math.min(Math.max(0, t), Math.max(0, duration - 0.001));
      let held = false;
      for (let i = 0; i < video.buffered.length; i++) if (t >= video.buffered.start(i) && t < video.buffered.end(i)) held = true;
      if (!held) {
        let k = segments.findIndex((s) => t >= s.media && t < s.media + s.length);
        if (k < 0) k = segments.length - 1;
        seekSegment = k;
        if (k > 0 && segments[k - 1].run === segments[k].run) k -= 1;
        generation += 1; next = k; appendedInit = null;
        controller.abort();
        controller = new AbortController();
        if (buffer.updating) buffer.abort();
      }
      video.currentTime = t;
      pump();
    }

    // Holes in what is buffered: at a gap the audio of the next recording starts up to a frame after
    // its picture, and a range that starts inside a GOP has nothing before its first keyframe. A
    // browser stops at a hole, so the play head jumps to what follows it (within 10 s), as players do.
    let jumps = 0;
    function jumpHole() {
      const t = video.currentTime;
      for (let i = 0; i < video.buffered.length; i++) {
        const start = video.buffered.start(i);
        const behind = i === 0 ? t >= 0 : video.buffered.end(i - 1) - t < 1;
        if (start > t && start - t < 10 && behind) {
          video.currentTime = start + 0.001;
          jumps += 1;
          return;
        }
      }
    }
    video.addEventListener("waiting", jumpHole);
    video.addEventListener("stalled", jumpHole);

    // The timeline: recorded ranges of the listing over [start, end), the play head, previews on hover.
    let cues = [];
    function drawBar() {
      for (const [a, b] of ranges) {
        const d = document.createElement("div");
        d.className = "range";
        d.style.left = `${(100 * (a - start)) / (end - start)}%`;
        d.style.width = `${(100 * (b - a)) / (end - start)}%`;
        bar.insertBefore(d, bar.firstChild);
      }
    }
    const wallAt = (event) => start + ((event.clientX - bar.getBoundingClientRect().left) / bar.clientWidth) * (end - start);
    bar.addEventListener("click", (event) => seekMedia(mediaOf(wallAt(event))));
    bar.addEventListener("mousemove", (event) => {
      const offset = (wallAt(event) - start) / 1000, cue = cues.find((c) => offset >= c.from && offset < c.to);
      const tip = document.getElementById("tip");
      tip.style.display = cue ? "block" : "none";
      if (!cue) return;
      const tile = document.getElementById("tile");
      Object.assign(tile.style, { width: `${cue.w}px`, height: `${cue.h}px`, backgroundImage: `url("${cue.url}")`, backgroundPosition: `-${cue.x}px -${cue.y}px` });
      tip.style.left = `${event.clientX - bar.getBoundingClientRect().left}px`;
      document.getElementById("tiptime").textContent = new Date(wallAt(event)).toISOString().slice(11, 19);
    });
    async function previews() {
      const every = Number(p.get("every") || Math.max(1, Math.ceil((end - start) / 1000 / 200)));
      const r = await fetch(`/thumbnails?start_ms=${start}&end_ms=${end}&channel=${channel}&every_ms=${every * 1000}`, auth);
      if (!r.ok) return;
      const seconds = (s) => s.split(":").reduce((n, x) => n * 60 + parseFloat(x), 0);
      for (const block of (await r.text()).split("\n\n").slice(1)) {
        const [times, target] = block.trim().split("\n");
        if (!target) continue;
        const [from, to] = times.split(" --> ").map(seconds);
        const [url, box] = target.split("#xywh=");
        const [x, y, w, h] = box.split(",").map(Number);
        cues.push({ from, to, url, x, y, w, h });
      }
    }

    // Controls: play/pause, speeds 1/8 to 8, the wall clock of the play head.
    const play = document.getElementById("play");
    play.onclick = () => (video.paused ? video.play() : video.pause());
    video.onplay = () => (play.textContent = "pause");
    video.onpause = () => (play.textContent = "play");
    for (const rate of [0.125, 0.25, 0.5, 1, 2, 4, 8]) {
      const b = document.createElement("button");
      b.textContent = rate < 1 ? `1/${1 / rate}x` : `${rate}x`;
      b.onclick = () => { video.playbackRate = rate; for (const o of document.querySelectorAll("#speeds button")) o.classList.toggle("on", o === b); };
      document.getElementById("speeds").appendChild(b);
    }
    // The play head and the wall clock it is at (from the playlist on, before anything plays).
    function showHead() {
      document.getElementById("head").style.left = `${(100 * (wallAt0() - start)) / (end - start)}%`;
      document.getElementById("clock").textContent = new Date(wallAt0()).toISOString().replace("T", " ").slice(0, 23);
    }
    video.addEventListener("timeupdate", () => { showHead(); pump(); });
    const wallAt0 = () => (runs.length ? wallOf(video.currentTime) : start);

    // Test hooks: the luma of the shown picture, read back from a canvas (after `seeked`, the picture at
    // the new time is the element's current one).
    // A canvas the element drew nothing into stays transparent (alpha 0), which a picture never is.
    // When the element itself draws nothing (seen about once in six runs here, the picture presented and
    // the element ready), the same picture is taken as a WebCodecs VideoFrame of the element, then as an
    // ImageBitmap; `via` says which source drew.
    async function luma(w, h) {
      const c = document.createElement("canvas");
      c.width = w; c.height = h;
      const g = c.getContext("2d", { willReadFrequently: true });
      const read = () => {
        const d = g.getImageData(0, 0, w, h).data, out = [];
        let drawn = false;
        for (let i = 0; i < d.length; i += 4) {
          drawn = drawn || d[i + 3] !== 0;
          out.push(Math.round(0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2]).toString(16).padStart(2, "0"));
        }
        return { hex: out.join(""), drawn };
      };
      const sources = [
        ["element", async () => video],
        ["videoframe", async () => new VideoFrame(video)],
        ["bitmap", async () => createImageBitmap(video)],
      ];
      let picture = { hex: "", drawn: false, via: "none" };
      for (const [via, make] of sources) {
        let image = null;
        try {
          image = await make();
          g.clearRect(0, 0, w, h);
          g.drawImage(image, 0, 0, w, h);
          picture = { ...read(), via };
        } catch (e) {
          picture = { ...picture, via: `${via}-failed` };
        } finally {
          if (image && image !== video && image.close) image.close();
        }
        if (picture.drawn) break;
      }
      return picture;
    }

    (async () => {
      if (!token || !(start < end)) return fail("the page needs #token=…&start=…&end=…&channel=…");
      try { await listing(); await playlist(); } catch (e) { return fail(e.message); }
      drawBar();
      showHead();
      log(`clock ${document.getElementById("clock").textContent} hls=${document.getElementById("hls").getAttribute("href") ? 1 : 0}`);
      previews();
      source = new MediaSource();
      video.src = URL.createObjectURL(source);
      await new Promise((resolve) => source.addEventListener("sourceopen", resolve, { once: true }));
      const init = await get(segments[0].init);
      const type = codecs(init);
      log(`codecs ${type.slice(type.indexOf('"') + 1, -1).replace(/ /g, "")}`);
      // A codec this browser cannot decode (H.265 in most): said so, with the playlist for a player.
      if (!MediaSource.isTypeSupported(type)) return fail(`this browser cannot play ${type}: open the HLS playlist in a player that can (VLC, ffplay, Safari)`);
      buffer = source.addSourceBuffer(type);
      bufferType = type;
      source.duration = duration;
      const listed = ranges.reduce((n, [a, b]) => n + (b - a), 0) / 1000;
      log(`ready duration=${duration.toFixed(3)} listed=${listed.toFixed(3)} runs=${runs.length} segments=${segments.length}`);
      pump();
      if (bench > 0) {
        // Benchmarks/player-seek.sh: click-seeks spread over the range, none of them buffered, each timed
        // from the click to the picture at its time (`seeked`).
        for (let i = 0; i < bench; i++) {
          const wall = start + ((i + 0.5) * (end - start)) / bench, began = performance.now();
          await new Promise((resolve) => { video.addEventListener("seeked", resolve, { once: true }); seekMedia(mediaOf(wall)); });
          console.log(`tipipe-player seek ${i} ms=${(performance.now() - began).toFixed(1)}`);
        }
        // The loader stops first: a fetch cut by the closing window is no failure.
        generation += 1;
        controller.abort();
        setTimeout(() => window.close(), 50);
        return;
      }
      if (!test) return;
      // Seek as a click would, show the picture's luma, then play to the end across the gaps.
      const wall = Number(p.get("seek"));
      await new Promise((resolve) => { video.addEventListener("seeked", resolve, { once: true }); seekMedia(mediaOf(wall)); });
      await video.play(); video.pause();
      // `seeked` says the element is at the new time, not that its picture has reached the compositor: on a
      // loaded machine a canvas drawn then is still empty. The frame callback fires when a picture is
      // presented (also while paused): the one of the seek's time is the last at or before it (a picture
      // still queued from playing is later); 10 s without it is reported, not waited forever.
      const target = mediaOf(wall);
      const presented = new Promise((resolve) => {
        const timer = setTimeout(() => resolve(false), 10000);
        const check = (now, frame) => {
          if (frame.mediaTime <= target + 0.001 && frame.mediaTime > target - 0.1) { clearTimeout(timer); resolve(true); }
          else video.requestVideoFrameCallback(check);
        };
        video.requestVideoFrameCallback(check);
      });
      await new Promise((resolve) => { video.addEventListener("seeked", resolve, { once: true }); video.currentTime = target; });
      const shown = await presented;
      // A presented picture that no source draws (not seen since `luma` takes the element's VideoFrame) is
      // drawn again every 100 ms, and decoded again by a seek to the same time every second, for up to
      // 10 s, until it draws.
      // Read back at 64x48, or at `luma=WxH` (a picture's own size: no browser scaling to judge).
      const [lw, lh] = (p.get("luma") || "64x48").split("x").map(Number);
      let picture = await luma(lw, lh), tries = 1;
      while (!picture.drawn && tries < 100) {
        if (tries % 10 === 0) {
          await new Promise((resolve) => { video.addEventListener("seeked", resolve, { once: true }); video.currentTime = target; });
        } else {
          await new Promise((resolve) => setTimeout(resolve, 100));
        }
        picture = await luma(lw, lh);
        tries += 1;
      }
      const spans = [];
      for (let i = 0; i < video.buffered.length; i++) spans.push(`${video.buffered.start(i).toFixed(2)}-${video.buffered.end(i).toFixed(2)}`);
      log(`frame wall=${Math.round(wallOf(video.currentTime))} presented=${shown ? 1 : 0} size=${video.videoWidth}x${video.videoHeight} drawn=${picture.drawn ? tries : 0} via=${picture.via} luma=${picture.hex} ready=${video.readyState} at=${video.currentTime.toFixed(3)} buffered=${spans.join(",")}`);
      let crossed = 0, lastRun = -1;
      video.addEventListener("timeupdate", () => {
        const run = segments.findIndex((s) => video.currentTime >= s.media && video.currentTime < s.media + s.length);
        const r = run >= 0 ? segments[run].run : lastRun;
        if (r !== lastRun) { if (lastRun >= 0) crossed += 1; lastRun = r; }
      });
      video.onended = () => {
        const spans = [];
        for (let i = 0; i < video.buffered.length; i++) spans.push(`${video.buffered.start(i).toFixed(2)}-${video.buffered.end(i).toFixed(2)}`);
        log(`ended crossed=${crossed} jumps=${jumps} buffered=${spans.join(",")} current=${video.currentTime.toFixed(3)}`);
        setTimeout(() => window.close(), 50);
      };
      video.playbackRate = Number(p.get("rate") || "1");
      await new Promise((resolve) => {
        video.addEventListener("seeked", resolve, { once: true });
        seekMedia(p.get("from") === "start" ? 0 : Math.max(0, runs[runs.length > 1 ? 1 : 0].media - 2));
      });
      await video.play();
    })();
    </script></body></html>
    """#
}
