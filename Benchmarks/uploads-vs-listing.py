#!/usr/bin/env python3
"""Listing latency of `tipipe serve` while log-upload bombs arrive (issue 24: 20 bombs in parallel, a
listing stays under 50 ms p99).

Usage: Benchmarks/uploads-vs-listing.py [--runs 5] [--bombs 20] [--listings 200] [--tipipe PATH]

Makes (once, under Benchmarks/out/) a 60 s synthetic library and a gzip bomb: a .tar.gz of ~1 MB holding
one 1 GiB file of zeros. Each run starts `tipipe serve` (release build) and, on one keep-alive connection,
times --listings listing requests back to back: first alone (baseline), then while --bombs curl
processes POST the bomb to /v1/logs with a valid device token, all at once (attack). Two server
configurations, interleaved run by run:
  default   the stated upload limits (6 uploads a device starts per minute: the rest are 429 at headers)
  inspected limits lifted so that every bomb is admitted and inspected up to its expansion cap (413)
Prints, per run and configuration, the listing latency p50 / p99 / max (ms) alone and under attack, the
bombs' statuses and the server's CPU time; then min / median / max of the p99s over the runs. Client and
server share the machine's cores (2 here), and the machine is shared: figures bound the server from below.
"""

import argparse
import collections
import gzip
import http.client
import io
import json
import os
import statistics
import subprocess
import sys
import tarfile
import time
import urllib.parse

OUT = "Benchmarks/out"


class Zeros(io.RawIOBase):
    """`size` zero bytes, read in pieces (tarfile streams a member from it)."""

    def __init__(self, size):
        self.left = size

    def readable(self):
        return True

    def readinto(self, buffer):
        count = min(len(buffer), self.left)
        buffer[:count] = bytes(count)
        self.left -= count
        return count


def make_inputs(tipipe):
    library = f"{OUT}/uploads-library"
    if not os.path.exists(f"{library}/index.json"):
        subprocess.run([tipipe, "synth", "--out", library, "--duration", "60"], check=True, capture_output=True)
    bomb = f"{OUT}/bomb-1GiB.tar.gz"
    if not os.path.exists(bomb):
        size = 1 << 30
        with gzip.open(bomb + ".part", "wb", compresslevel=9) as compressed:
            with tarfile.open(fileobj=compressed, mode="w|") as archive:
                member = tarfile.TarInfo("tipipe.log")
                member.size = size
                archive.addfile(member, io.BufferedReader(Zeros(size), 1 << 20))
        os.rename(bomb + ".part", bomb)
    return library, bomb


def cpu_seconds(pid):
    with open(f"/proc/{pid}/stat") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def listings(connection, path, token, count):
    latencies = []
    for _ in range(count):
        began = time.monotonic()
        connection.request("GET", path, headers={"Authorization": f"Bearer {token}"})
        answer = connection.getresponse()
        answer.read()
        latencies.append((time.monotonic() - began) * 1000)
        if answer.status != 200:
            raise SystemExit(f"listing answered {answer.status}")
    return sorted(latencies)


def quantiles(latencies):
    p = lambda q: latencies[min(len(latencies) - 1, int(q * len(latencies)))]
    return p(0.5), p(0.99), latencies[-1]


def run(tipipe, library, bomb, mode, bombs, count):
    flags = []
    if mode == "inspected":
        flags = ["--uploads-per-minute", "1000000", "--upload-quota-count", "1000000",
                 "--upload-quota-bytes", str(1 << 50)]
    server = subprocess.Popen(
        [tipipe, "serve", "--root", library, "--port", "0", "--quiet"] + flags,
        stdout=subprocess.PIPE, text=True)
    try:
        endpoint = server.stdout.readline().split()[-1]
        parsed = urllib.parse.urlparse(endpoint)
        index = json.load(open(f"{library}/index.json"))
        token = subprocess.run([tipipe, "token", "--device-id", index["device_id"], "--ttl", "3600"],
                               capture_output=True, text=True, check=True).stdout.strip()
        first = index["segments"][0]["start_ms"]
        path = f"/v1/recordings?start_ms={first}&end_ms={first + 60000}"
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port)
        listings(connection, path, token, 10)  # warm-up
        alone = listings(connection, path, token, count)
        cpu_before = cpu_seconds(server.pid)
        uploads = [subprocess.Popen(
            ["curl", "-s", "-o", "/dev/null", "-w", "%{http_code}", "-H", "X-Ti-App-Id: bench",
             "-H", f"Authorization: Bearer {token}", "-H", "Content-Type: application/gzip",
             "--data-binary", f"@{bomb}", f"{endpoint}/v1/logs"],
            stdout=subprocess.PIPE, text=True) for _ in range(bombs)]
        attacked = []
        while any(upload.poll() is None for upload in uploads) or len(attacked) < count:
            attacked += listings(connection, path, token, 1)
        attacked.sort()
        statuses = collections.Counter(upload.communicate()[0] for upload in uploads)
        cpu = cpu_seconds(server.pid) - cpu_before
        return alone, attacked, statuses, cpu
    finally:
        server.terminate()
        server.wait()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--bombs", type=int, default=20)
    parser.add_argument("--listings", type=int, default=200)
    parser.add_argument("--tipipe", default=".build/release/tipipe")
    args = parser.parse_args()
    os.makedirs(OUT, exist_ok=True)
    library, bomb = make_inputs(args.tipipe)
    print(f"# {time.strftime('%Y-%m-%dT%H:%MZ', time.gmtime())} {' '.join(sys.argv)}  ({os.cpu_count()} cores)")
    print(f"bomb: {os.path.getsize(bomb)} bytes compressed, {1 << 30} unpacked; {args.bombs} at once")
    p99s = collections.defaultdict(list)
    for number in range(1, args.runs + 1):
        for mode in ("default", "inspected"):
            alone, attacked, statuses, cpu = run(args.tipipe, library, bomb, mode, args.bombs, args.listings)
            a, b = quantiles(alone), quantiles(attacked)
            p99s[(mode, "alone")].append(a[1])
            p99s[(mode, "attack")].append(b[1])
            print(f"run {number} {mode:9}: alone p50/p99/max {a[0]:.2f}/{a[1]:.2f}/{a[2]:.2f} ms ({len(alone)}); "
                  f"under attack {b[0]:.2f}/{b[1]:.2f}/{b[2]:.2f} ms ({len(attacked)}); "
                  f"bombs {dict(sorted(statuses.items()))}; server CPU {cpu:.2f} s")
    for (mode, phase), values in sorted(p99s.items()):
        print(f"{mode:9} {phase:6} listing p99 ms over {len(values)} runs: min {min(values):.2f}, "
              f"median {statistics.median(values):.2f}, max {max(values):.2f}")


if __name__ == "__main__":
    main()
