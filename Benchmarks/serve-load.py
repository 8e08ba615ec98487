#!/usr/bin/env python3
"""Load test of `tipipe serve`: concurrent keep-alive clients fetching random byte ranges of random objects.

Usage: Benchmarks/serve-load.py [--clients 64] [--seconds 60] [--minutes 60] [--tipipe PATH]

Starts `tipipe serve` (release build) on a free port over Benchmarks/out/720p-<minutes>min (made by
export-vs-ffmpeg.sh or cloud-vs-curl.sh), lists it, then runs --clients asyncio clients for --seconds,
each on one HTTP/1.1 connection, sending `Range: bytes=A-B` requests (1 B to 256 KB) for random objects
and checking every answer: status 206, Content-Range, and the bytes against the object file. Prints
requests, errors, requests/s, latency p50/p99/max, bytes/s, and the server's RSS (sampled every
second: first, max, last). The client is Python: requests/s is bounded by it, not only by the server.
"""

import argparse
import asyncio
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.parse


def rss_kb(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


async def client(host, port, objects, deadline, latencies, errors, counters, rng):
    reader, writer = await asyncio.open_connection(host, port)
    try:
        while time.monotonic() < deadline:
            path, size, data = rng.choice(objects)
            first = rng.randrange(size)
            last = min(size - 1, first + rng.randrange(256 * 1024))
            request = f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nRange: bytes={first}-{last}\r\n\r\n"
            began = time.monotonic()
            writer.write(request.encode())
            await writer.drain()
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            status = int(lines[0].split()[1])
            headers = {k.lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = await reader.readexactly(int(headers.get("content-length", "0")))
            latencies.append(time.monotonic() - began)
            counters["bytes"] += len(body)
            expected_range = f"bytes {first}-{last}/{size}"
            if status != 206 or headers.get("content-range") != expected_range or body != data[first:last + 1]:
                errors.append(f"{path} {first}-{last}: {status} {headers.get('content-range')} {len(body)} bytes")
    except Exception as error:  # a broken connection is an error of the run, not of the script
        errors.append(f"connection: {error!r}")
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--minutes", type=int, default=60)
    parser.add_argument("--tipipe", default=".build/release/tipipe")
    args = parser.parse_args()
    library = f"Benchmarks/out/720p-{args.minutes}min"
    index = json.load(open(f"{library}/index.json"))
    server = subprocess.Popen(
        [args.tipipe, "serve", "--root", library, "--port", "0", "--url-ttl", "86400", "--quiet"],
        stdout=subprocess.PIPE, text=True)
    try:
        endpoint = server.stdout.readline().split()[-1]
        parsed = urllib.parse.urlparse(endpoint)
        token = subprocess.run(
            [args.tipipe, "token", "--device-id", index["device_id"], "--ttl", "86400"],
            capture_output=True, text=True, check=True).stdout.strip()
        first, last = index["segments"][0], index["segments"][-1]
        listing_url = f"{endpoint}/v1/recordings?start_ms={first['start_ms']}&end_ms={min(last['end_ms'], first['start_ms'] + 864000000)}"
        listing = json.loads(subprocess.run(
            ["curl", "-s", "--fail", "-H", f"Authorization: Bearer {token}", listing_url],
            capture_output=True, check=True).stdout)
        by_id = {s["id"]: s for s in index["segments"]}
        rng = random.Random(1)
        # A sample of objects, their bytes held to check answers.
        sample = rng.sample(listing["segments"], min(40, len(listing["segments"])))
        objects = []
        for segment in sample:
            path = urllib.parse.urlparse(urllib.parse.urljoin(endpoint + "/v1/recordings", segment["url"]))
            data = open(os.path.join(library, by_id[segment["id"]]["url"]), "rb").read()
            objects.append((path.path + "?" + path.query, len(data), data))
        latencies, errors, counters = [], [], {"bytes": 0}
        rss = [rss_kb(server.pid)]
        began = time.monotonic()
        deadline = began + args.seconds

        async def sample_rss():
            while time.monotonic() < deadline:
                await asyncio.sleep(1)
                rss.append(rss_kb(server.pid))

        await asyncio.gather(
            sample_rss(),
            *(client(parsed.hostname, parsed.port, objects, deadline, latencies, errors, counters,
                     random.Random(seed)) for seed in range(args.clients)))
        elapsed = time.monotonic() - began
        rss.append(rss_kb(server.pid))
        latencies.sort()
        p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))] * 1000
        print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} {' '.join(sys.argv)}  ({os.cpu_count()} cores)")
        print(f"clients {args.clients}, {elapsed:.1f} s: {len(latencies)} requests, {len(errors)} errors, "
              f"{len(latencies) / elapsed:.0f} requests/s, {counters['bytes'] / elapsed / 1e6:.1f} MB/s")
        print(f"latency ms: p50 {p(0.5):.2f}, p99 {p(0.99):.2f}, max {latencies[-1] * 1000:.2f}")
        print(f"server RSS KB: first {rss[0]}, max {max(rss)}, last {rss[-1]}")
        for error in errors[:10]:
            print("error:", error)
        return 1 if errors else 0
    finally:
        server.terminate()
        server.wait()


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
