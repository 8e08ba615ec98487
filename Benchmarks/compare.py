#!/usr/bin/env python3
"""Runs commands side by side, interleaved, and prints what each cost.

Usage: compare.py [--runs N] [--before CMD] [--items N] LABEL CMD [LABEL CMD ...]

Each round runs every command once, so that a noisy neighbour taxes them alike, in the order given
rotated by one from round to round (each command first in as many rounds as the others, within one): on
this machine the first run of a round was taxed alone — a 60-minute export first after the round before
removed its files took 1.2-1.4 s of system time, the same export second 0.22-0.29 s.
For each command it prints min/median/max of the wall time and of the CPU time (user+sys of the
process and its children, from wait4, and each of user and sys), the median peak RSS, and (with --items) items per second at the
median wall time. Then, for every other command, the ratio of its medians of wall and CPU time to
those of the --versus command (the last one by default): below 1.0 it is cheaper than that peer.

A command that fails stops the benchmark: a figure of a failed run would be a lie.
"""

import argparse
import os
import resource
import shlex
import statistics
import subprocess
import sys
import tempfile
import time


def run_once(command, before):
    if before:
        subprocess.run(before, shell=True, check=True)
    # Peak RSS through /usr/bin/time: ru_maxrss survives exec, so a child forked from this Python
    # process would report at least Python's own size.
    with tempfile.NamedTemporaryFile(mode="r") as rss_file:
        wrapped = ["/usr/bin/time", "-f", "%M", "-o", rss_file.name, "/bin/sh", "-c", command]
        began = time.monotonic()
        process = subprocess.Popen(wrapped, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        _, status, usage = os.wait4(process.pid, 0)
        wall = time.monotonic() - began
        stderr = process.stderr.read().decode(errors="replace")
        process.stderr.close()
        code = os.waitstatus_to_exitcode(status)
        if code != 0:
            sys.exit(f"compare.py: `{command}` exited with {code}:\n{stderr}")
        rss_kb = int(rss_file.read().strip().splitlines()[-1])
    return wall, usage.ru_utime + usage.ru_stime, rss_kb, usage.ru_utime, usage.ru_stime


def summary(values, unit):
    return f"{min(values):.3f} / {statistics.median(values):.3f} / {max(values):.3f} {unit}"


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--before", help="shell command run before each measured run (e.g. sync)")
    parser.add_argument("--items", type=int, help="items each command processes, for a rate")
    parser.add_argument("--versus", help="the label ratios are taken against (default: the last)")
    parser.add_argument("pairs", nargs="+", help="LABEL CMD ...")
    arguments = parser.parse_args()
    if len(arguments.pairs) % 2 or arguments.runs < 1:
        parser.error("give LABEL CMD pairs and --runs >= 1")
    commands = list(zip(arguments.pairs[0::2], arguments.pairs[1::2]))
    results = {label: [] for label, _ in commands}
    for round in range(arguments.runs):
        shift = round % len(commands)
        for label, command in commands[shift:] + commands[:shift]:
            results[label].append(run_once(command, arguments.before))

    width = max(len(label) for label, _ in commands)
    print(f"{arguments.runs} interleaved runs (order rotated each round); min / median / max")
    medians = {}
    for label, command in commands:
        walls = [r[0] for r in results[label]]
        cpus = [r[1] for r in results[label]]
        rss = statistics.median(r[2] for r in results[label])
        medians[label] = (statistics.median(walls), statistics.median(cpus), rss)
        line = f"  {label:<{width}}  wall {summary(walls, 's')}   cpu {summary(cpus, 's')}   rss {rss / 1024:.0f} MB"
        if arguments.items:
            line += f"   {arguments.items / statistics.median(walls):.0f} items/s"
        print(line)
        users = [r[3] for r in results[label]]
        systems = [r[4] for r in results[label]]
        print(f"  {'':<{width}}  cpu = user {summary(users, 's')} + sys {summary(systems, 's')}")
        print(f"  {'':<{width}}  $ {command}")
    versus = arguments.versus or commands[-1][0]
    if versus not in medians:
        sys.exit(f"compare.py: no command labelled {versus}")
    for label, _ in commands:
        if label == versus:
            continue
        wall = medians[label][0] / medians[versus][0]
        cpu = medians[label][1] / medians[versus][1]
        memory = medians[label][2] / medians[versus][2]
        print(f"  ratio of medians {label} / {versus}: wall {wall:.2f}  cpu {cpu:.2f}  rss {memory:.2f}")


if __name__ == "__main__":
    main()
