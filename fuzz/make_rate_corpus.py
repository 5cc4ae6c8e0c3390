#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_rate into fuzz/corpus/fuzz_rate/.

Each seed is an operation sequence in the byte format that tests/model/rate_model.c
decodes (see read_settings(), read_start(), decode_op() and the op_* functions there);
this script documents that format by example. model_rate replays every file, so each seed
is also a regression test of the behaviour it names. Run it from anywhere:
    python3 fuzz/make_rate_corpus.py
Regenerate the seeds only when the byte format changes, and keep what libFuzzer found with
`fuzz_rate -merge=1 ...` (fuzz/README.md).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_rate")

SEC = 10**9
MS = 10**6
EXACT_TOKENS, EXACT_PERIOD, EXACT_BURST = 1 << 20, 1 << 40, 1 << 20


def u16(v):
    return [v & 0xFF, v >> 8]


def u64(v):
    v &= (1 << 64) - 1
    return [(v >> (8 * i)) & 0xFF for i in range(8)]


def upto(v, hi):  # read_upto(): as few bytes as the range [0, hi] needs
    assert 0 <= v <= hi
    if hi == 0:
        return []
    if hi < 256:
        return [v]
    if hi < 65536:
        return u16(v)
    return u64(v)


def size(v, mx):  # read_size(): 1..8 in one byte, up to 1000 in three, else nine
    assert 1 <= v <= mx
    if v <= 8:
        return [v - 1]
    if v <= 1000:
        return [160] + upto(v - 1, 999)
    return [230] + upto(v - 1, mx - 1)


class Run:
    """Bytes for one run, tracking what the decoder needs: the burst and one token's
    time (the scale of spans), whether the bucket is closed, which tickets are held."""

    def __init__(self, tokens, period, burst, start=0, extreme=False):
        self.out = [7 if extreme else 0]
        assert not extreme, "extreme runs are written by hand below"
        self.settings(tokens, period, burst)
        self.out += [0] + upto(start, 1000000)  # read_start(): a small clock
        self.closed = False
        self.live = set()

    def settings(self, tokens, period, burst):
        self.out += [1] + size(tokens, EXACT_TOKENS) + size(period, EXACT_PERIOD)
        self.out += size(burst, EXACT_BURST)
        self.tokens, self.period, self.burst = tokens, period, burst

    def step(self):  # step_of(): one token's time, at least 1 ns
        return self.period // self.tokens + 1

    def op(self, b):  # a closed bucket reads op bytes with (b & 3) == 0 as recreate
        if self.closed and b & 3 == 0:
            b += 1
        self.out.append(b)

    # arguments
    def n(self, v):  # read_n()
        small = min(self.burst, 8)
        if v == "burst":
            return [200]
        if v == "over":
            return [230]
        if v == 0:
            return [240]
        assert 1 <= v <= small
        return [v - 1]

    def span(self, v):  # read_span(), the short form: up to two tokens' worth
        return [0] + upto(v, 2 * self.step())

    def deadline(self, kind, v=0):  # read_deadline()
        if kind == "forever":
            return [0]
        if kind == "min":
            return [45]
        if kind == "past":  # clock - 1 - v
            return [60] + self.span(v)
        if kind == "now":
            return [80]
        return [100] + self.span(v)  # clock + v

    # operations
    def try_(self, n, race=None):
        """A try; with @race, an operation interleaved between its fast path's read of the
        word and its compare-and-swap (read only when the try gets there, so only for a try
        that the fast path grants): ("try", n), ("reserve", slot, n, deadline),
        ("cancel", slot), ("set", tokens, period, burst), ("close",) or ("available",)."""
        self.op(0)
        self.out += self.n(n)
        if race is None:
            self.out.append(255)  # exact runs read a race byte: >= 64, none
            return self
        kind = race[0]
        self.out.append(0)
        if kind == "try":
            self.out += [0] + self.n(race[1])
        elif kind == "reserve":
            slot, n2 = race[1], race[2]
            dl = race[3] if len(race) > 3 else ("forever",)
            assert slot not in self.live
            self.out += [1, slot] + self.n(n2) + self.deadline(*dl)
            self.live.add(slot)
        elif kind == "cancel":
            self.out += [2, race[1] | 0x40]
            self.live.discard(race[1])
        elif kind == "set":
            self.out += [3]
            self.settings(*race[1:])
        elif kind == "close":
            self.out += [4, 1]
            self.closed = True
        else:
            self.out += [5]
        return self

    def reserve(self, slot, n, dl=("forever",)):
        assert slot not in self.live
        self.op(50)
        self.out += [slot] + self.n(n) + self.deadline(*dl)
        self.live.add(slot)  # if granted; cancel() below keeps it honest
        return self

    def wait(self, n, dl=("forever",)):
        self.op(100)
        self.out += [0] + self.n(n) + self.deadline(*dl)
        return self

    def cancel(self, slot):
        self.op(120)
        self.out += [slot | 0x40]  # exactly this slot
        self.live.discard(slot)
        return self

    def advance(self, ns):
        self.op(140)
        self.out += self.span(ns)
        return self

    def back(self, ns):
        self.op(185)
        self.out += self.span(ns)
        return self

    def jump(self, case, v=0):  # 0: INT64_MIN + v, 1: -v, 2: v, 3: before the end, 4: INT64_MAX - v
        self.op(197)
        self.out += [case] + ([v] if case < 5 else [])
        return self

    def set(self, tokens, period, burst):
        self.op(200)
        self.settings(tokens, period, burst)
        return self

    def set_invalid(self, which):  # 8 + 8k: tokens 0, period 0, period -1, burst 0, ...
        self.op(200)
        self.out += [8 * which] + size(self.tokens, EXACT_TOKENS)
        self.out += size(self.period, EXACT_PERIOD) + size(self.burst, EXACT_BURST)
        return self

    def available(self):
        self.op(220)
        return self

    def stats(self):
        self.op(240)
        return self

    def close(self):
        self.op(250)
        self.out += [1]
        self.closed = True
        return self

    def recreate(self, tokens, period, burst, start=0):
        self.op(252)
        self.settings(tokens, period, burst)
        self.out += [0] + upto(start, 1000000)
        self.closed = False
        self.live = set()
        return self

    def bytes(self):
        return bytes(self.out)


def splitmix_bytes(seed, n):
    out, s = [], seed
    mask = (1 << 64) - 1
    while len(out) < n:
        s = (s + 0x9E3779B97F4A7C15) & mask
        z = s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & mask
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & mask
        z ^= z >> 31
        out += [(z >> (8 * i)) & 0xFF for i in range(8)]
    return out[:n]


def seeds():
    s = {}
    # 10/s, burst 10, drained at 0; raised to 20/s at 50 ms: the next token is due at
    # 75 ms (half a token accrued under the old rate, the other half at the new one).
    r = Run(10, SEC, 10)
    r.try_("burst").try_(1).advance(50 * MS).set(20, SEC, 10).try_(1).reserve(0, 1)
    r.advance(20 * MS).cancel(0).available().advance(5 * MS).available().stats()
    s["rate_change_keeps_accrual"] = r.bytes()
    # Lowered at 50 ms to 5/s: the other half takes 100 ms.
    r = Run(10, SEC, 1)
    r.try_(1).advance(50 * MS).set(5, SEC, 1).try_(1).advance(100 * MS).try_(1).stats()
    s["rate_lowered_keeps_accrual"] = r.bytes()
    # An empty bucket of 3 raised to 20 mints nothing; a full one lowered to 2 holds 2.
    r = Run(1, SEC, 3)
    r.try_("burst").set(1, SEC, 20).available().try_(1).advance(2 * SEC).available()
    r.advance(2 * SEC).advance(2 * SEC).set(1, SEC, 2).available().stats()
    s["burst_change_mints_nothing"] = r.bytes()
    # Bookings ahead of the bucket, then a rate change: the debt stays owed in tokens.
    r = Run(1, SEC, 1)
    r.reserve(0, 1).reserve(1, 1).reserve(2, 1).set(10, SEC, 1).try_(1).cancel(2)
    r.try_(1).advance(100 * MS).reserve(3, 1).stats()
    s["rate_change_while_owing"] = r.bytes()
    # A past deadline takes what is there and refuses what would have to wait.
    r = Run(1, SEC, 2)
    r.reserve(0, 1, ("past", 5)).wait(1, ("min",)).reserve(1, 1, ("past", 0))
    r.wait(1, ("now",)).reserve(2, 1, ("ahead", SEC)).wait(1, ("ahead", 2 * SEC)).stats()
    s["past_deadline"] = r.bytes()
    # A clock that steps back: a booking made at once stays due, nothing refills, no
    # counter wraps; a delayed booking cancelled after the step gives its token back.
    r = Run(10, SEC, 1, start=1000)
    r.reserve(0, 1).back(50 * MS).cancel(0).try_(1).reserve(1, 1).back(150 * MS)
    r.cancel(1).stats().available().advance(100 * MS).advance(100 * MS).advance(100 * MS)
    r.available().stats()
    s["clock_steps_back"] = r.bytes()
    # The ends of the clock's range, in an exact run.
    r = Run(3, 1000, 5)
    r.jump(0, 3).available().try_(2).reserve(0, 5).jump(3, 0).available().try_(1)
    r.jump(4, 0).try_(1).reserve(1, 1).stats().jump(5).try_(1).stats()
    s["clock_extremes"] = r.bytes()
    # Invalid settings, close, recreate.
    r = Run(2, 7, 3)
    for k in range(7):
        r.set_invalid(k)
    r.try_(0).try_("over").close().try_(1).reserve(0, 1).cancel(0).stats()
    r.recreate(5, 3, 8, start=77).try_(8).stats()
    s["invalid_close_recreate"] = r.bytes()
    # Tries whose compare-and-swap meets an interleaved operation, as a racing thread's
    # would: the other operation comes first, then the try retries on what it left.
    r = Run(3, 1000, 5)
    r.try_(1, race=("try", 2)).try_(1, race=("reserve", 0, 2)).try_(1).stats()
    r.advance(600).advance(600).advance(600).try_(1, race=("set", 6, 1000, 5)).try_(1, race=("cancel", 0))
    r.try_(1, race=("available",)).reserve(1, 4).advance(300)
    r.try_(1, race=("cancel", 1)).try_(1, race=("close",)).stats()
    s["raced_try"] = r.bytes()
    # Extreme runs (first byte 7): settings from the tables in rate_model.c.
    #  INT64_MAX tokens per INT64_MAX ns, the largest burst, clock at INT64_MIN.
    s["extreme_max_rate"] = bytes(
        [7, 1, 8, 9, 2]  # settings: tokens[8], periods[9], burst "full"
        + [215, 0, 0]  # start: INT64_MIN + 0
        + [0, 200, 50, 0, 200, 0, 240]  # try(burst), reserve(burst, forever), stats
        + [140, 245] + u64(1 << 62) + [0, 230, 240]  # advance 2^61, try(over), stats
    )
    #  1 token per INT64_MAX / 2 ns, burst 1, set to INT64_MAX tokens per ns and back.
    s["extreme_set"] = bytes(
        [7, 1, 0, 7, 0, 0]  # settings: tokens 1, period INT64_MAX / 2, burst 1; clock 0..
        + u64(0)
        + [0, 0, 50, 0, 0, 0, 200, 1, 8, 0, 2]  # try 1, reserve 1, set(INT64_MAX, 1, full)
        + [220, 200, 1, 0, 9, 0, 240]  # available, set(1, INT64_MAX, 1), stats
    )
    s["random_1"] = bytes([0] + splitmix_bytes(1, 4096))
    s["random_2"] = bytes([7] + splitmix_bytes(2, 4096))
    return s


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(data)
    print("wrote %d seeds to %s" % (len(seeds()), OUT))


if __name__ == "__main__":
    main()
