#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""sampler.py - peak open descriptors and resident memory of a process tree.

usage: sampler.py ROOTPID OUTFILE [INTERVAL_MS]

Every INTERVAL_MS (default 10) walks the descendants of ROOTPID (not ROOTPID itself: the
runner's /usr/bin/time) through /proc/<pid>/task/<tid>/children, and sums over them the
entries of /proc/<pid>/fd and the resident set (/proc/<pid>/statm). Stops when ROOTPID is
gone or a zombie, or on SIGTERM, and writes "peak_fds peak_tree_rss_kb samples" to
OUTFILE. A process that ends between two samples is missed: the peaks are lower bounds.
"""
import os
import signal
import sys
import time

PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024
stop = False


def on_term(signum, frame):
    global stop
    stop = True


def children(pid):
    out = []
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            try:
                with open(f"/proc/{pid}/task/{tid}/children") as f:
                    out.extend(int(c) for c in f.read().split())
            except OSError:
                pass
    except OSError:
        pass
    return out


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
        return state not in ("Z", "X")
    except (OSError, IndexError):
        return False


def sample(root):
    fds = rss = 0
    todo = children(root)
    while todo:
        pid = todo.pop()
        try:
            fds += len(os.listdir(f"/proc/{pid}/fd"))
            with open(f"/proc/{pid}/statm") as f:
                rss += int(f.read().split()[1]) * PAGE_KB
        except (OSError, IndexError, ValueError):
            continue
        todo.extend(children(pid))
    return fds, rss


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    root = int(sys.argv[1])
    interval = (float(sys.argv[3]) if len(sys.argv) > 3 else 10.0) / 1000.0
    signal.signal(signal.SIGTERM, on_term)
    peak_fds = peak_rss = samples = 0
    while not stop and alive(root):
        fds, rss = sample(root)
        peak_fds = max(peak_fds, fds)
        peak_rss = max(peak_rss, rss)
        samples += 1
        time.sleep(interval)
    with open(sys.argv[2], "w") as f:
        f.write(f"{peak_fds} {peak_rss} {samples}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
