#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_fair into fuzz/corpus/fuzz_fair/.

Each seed is an operation sequence in the byte format that tests/model/fair_model.c
decodes (create_fair(), decode_op() and the op_* functions there); this script documents
that format by example. Run it from anywhere:  python3 fuzz/make_corpus_fair.py
The files are small and stable; regenerate them only when the byte format changes, and
keep what libFuzzer found with `fuzz_fair -merge=1 ...` (fuzz/README.md).
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_fair")

NO_REENTER, REENTER = 1, 0  # the byte after each op byte: (b & 7) == 0 -> wakes call back in

# Key bytes: b % 6 picks from the pool {0, 1, 2, 3, 0xdeadbeef, UINT64_MAX}; with
# max_keys <= 16, a byte with (b & 0xe0) == 0xe0 is a key never seen before.
POOL = {0: 0, 1: 1, 2: 2, 3: 3, "beef": 4, "max": 5}
FRESH = 0xE0


def config(capacity, classes=1, headroom=(), quantum=1, max_keys=6):
    """A configuration: capacity 1..12, 1..3 classes (class 0 the most urgent), and the
    headroom of classes 1.. in 0..capacity-1, never decreasing (class 0 has none)."""
    assert 1 <= capacity <= 12 and 1 <= classes <= 3 and len(headroom) == classes - 1
    assert list(headroom) == sorted(headroom) and all(0 <= h < capacity for h in headroom)
    b = [capacity - 1]
    b += [{1: 0, 2: 100, 3: 180}[classes]]
    for h in headroom:
        b += [1, h]  # (byte & 3) != 0: headroom next % capacity
    assert 1 <= quantum <= 3
    b += [quantum - 1]  # quantum 1 + byte % 3
    b += [0x10]  # default weight 1, default cap the capacity
    assert 2 <= max_keys <= 8
    b += [max_keys - 2]
    b += [1]  # no invalid configuration first
    return b


def giant_config():
    """The largest capacity, BAND_FAIR_MAX_CAPACITY, one class, quantum 1."""
    return [250, 0, 0, 0, 0x10, 4, 1]


def units(n):  # 1..4 as 1 + next % 4, or 0..8 as next % 9
    return [0, n - 1] if 1 <= n <= 4 else [15, n % 9]


HALF_CAPACITY = [14, 0]  # with a capacity above 64: capacity / 2 + 1
WHOLE_CAPACITY = [12 | 0x10]  # the key's cap (the capacity by default)

OPS = dict(try_=1, past=41, async_=53, cancel=131, release=166, key_set=217,
           key_unset=231, wait=238, destroy_busy=250, close=252, recreate=253, handle=36)


def op(name, args=(), reenter=False):
    return [OPS[name], REENTER if reenter else NO_REENTER] + list(args)


def key(k):
    return [k] if isinstance(k, int) and k >= FRESH else [POOL[k]]


def try_(k, c, n, reenter=False):
    return op("try_", key(k) + [c] + units(n), reenter)


def async_(slot, k, c, n, reenter=False):
    amount = n if isinstance(n, list) else units(n)
    return op("async_", [slot] + key(k) + [c] + amount, reenter)


def cancel(slot, reason="cancel"):
    return op("cancel", [{"cancel": 0, "timeout": 3, "other": 6, "invalid": 7}[reason], slot])


def release(pick, how):
    """pick: a holder chosen by (pick >> 3) % holders; how: all, one, half, or too_many."""
    return op("release", [(pick << 3) | 1, {"all": 0, "one": 2, "half": 4, "too_many": 6}[how]])


def key_set(k, weight, cap=None, reserve=None):
    """weight 1..4; cap and reserve (None: the capacity and no reservation) as byte % ..."""
    b = key(k) + [{1: 4, 2: 5, 3: 6, 4: 7}[weight]]
    b += [0] if cap is None else [3, cap]  # cap: 0, or 1 + byte % capacity
    b += [0] if reserve is None else [5, reserve]  # reserve: 1 + byte % cap
    return op("key_set", b)


def handle(k):
    """Get a handle on pool key k, or put the one it has. While a key has one, every try
    (not the past-deadline acquire) and release of it reads one more byte at its end:
    (byte & 3) != 0 goes through the handle. Use via() for that byte."""
    return op("handle", [POOL[k]])


VIA_HANDLE, BY_ID = [1], [0]


def seeds():
    out = {}

    # Weights 1:2:4 on capacity 3: the weight-4 key's quantum exceeds the capacity.
    b = config(3) + key_set(1, 1) + key_set(2, 2) + key_set(3, 4) + try_(0, 0, 3)
    for i in range(12):
        b += async_(i, 1 + i % 3, 0, 1)
    for i in range(40):
        b += release(i % 5, "one")
    for i in range(12, 20):
        b += async_(i, 1 + i % 3, 0, 1)
    for i in range(40):
        b += release(i % 3, "one")
    out["quantum_over_capacity"] = b

    # Capacity 6, the weight-4 key capped at 2: set aside at its cap, back in its place.
    b = config(6) + key_set(1, 1) + key_set(2, 2) + key_set(3, 4, cap=1) + try_(0, 0, 6)
    for i in range(18):
        b += async_(i, 1 + i % 3, 0, 1)
    for i in range(60):
        b += release(i % 7, "one" if i % 4 else "all")
    out["cap_below_quantum"] = b

    # Capacity 10, classes 1 and 2 leaving 2 and 4 units free for the classes before them,
    # two reserved keys, borrowing.
    b = config(10, classes=3, headroom=(2, 4))
    b += key_set(1, 2, reserve=2) + key_set(2, 1, reserve=1)
    b += try_(3, 2, 5) + try_(0, 0, 4)
    for i, (k, c, n) in enumerate([(1, 2, 2), (2, 1, 1), (3, 2, 3), (0, 0, 2), (1, 0, 1),
                                   ("beef", 1, 4), (2, 2, 2), (3, 1, 1)]):
        b += async_(i, k, c, n, reenter=i % 3 == 0)
    for i in range(30):
        b += release(i, ("all", "one", "half")[i % 3])
    b += try_(1, 1, 1) + try_(2, 2, 1)
    for i in range(8, 14):
        b += async_(i, i % 4, 2 - i % 3, 1 + i % 3)
    for i in range(30):
        b += release(i + 1, "one")
    out["classes_and_reservations"] = b

    # A lowered cap fails the queued requests above it; a raised one lets the key back.
    b = config(8) + key_set(1, 1, cap=5) + try_(1, 0, 3)
    for i, n in enumerate([3, 2, 1, 3]):
        b += async_(i, 1, 0, n)
    b += async_(4, 2, 0, 2) + async_(5, 2, 0, 4)
    b += key_set(1, 1, cap=1)  # cap 2: its requests of 3 end with BAND_E2BIG
    b += release(0, "all") + key_set(1, 3) + op("key_unset", key(1))
    for i in range(10):
        b += release(i, "one")
    out["cap_lowered"] = b

    # Close with requests queued in both classes; destroy while busy; recreate.
    b = config(4, classes=2, headroom=(1,)) + try_(0, 1, 3)
    for i in range(10):
        b += async_(i, i % 4, 1 - i % 2, 1 + i % 2, reenter=i == 4)
    b += op("destroy_busy") + cancel(3) + cancel(3) + cancel(4, "timeout") + cancel(5, "invalid")
    b += op("close", reenter=True) + op("destroy_busy") + try_(1, 1, 1) + async_(11, 2, 0, 1)
    b += release(0, "all")
    b += op("recreate") + config(1) + try_(1, 0, 1) + async_(0, 2, 0, 1) + release(0, "all")
    out["close_with_waiters"] = b

    # The largest capacity over a quantum of 1: requests of half of it are due 2^60 rounds
    # apart, so the rounds pass 2^62 and are rebased; then requests of all of it until the
    # units queued would pass 2^64 - 1 (BAND_EOVERFLOW).
    b = giant_config() + try_(0, 0, 1)
    for i in range(9):
        b += async_(i, 1 + i % 3, 0, HALF_CAPACITY)
    for i in range(30):
        b += release(i, "all")
    for i in range(12):
        b += async_(i, i % 4, 0, WHOLE_CAPACITY)
    b += cancel(0) + cancel(1, "timeout")
    out["giant_rounds"] = b

    # A key table of 2: fresh keys are refused while two keys hold units.
    b = config(12, max_keys=2)
    for i in range(6):
        b += try_(FRESH + i, 0, 1)
    b += try_(1, 0, 1) + async_(0, 2, 0, 1)
    b += op("key_set", key(FRESH + 7) + [4, 0, 0])
    b += release(0, "all") + release(1, "all") + release(2, "all")
    for i in range(6):
        b += async_(i, FRESH + i, 0, 2)
    for i in range(8):
        b += release(i, "all")
    out["key_table_full"] = b

    # Blocking acquires: one queues and times out, one is granted at once.
    b = config(2) + try_(0, 0, 2) + op("wait", key(1) + [0] + units(1)) + release(0, "all")
    b += op("wait", key(2) + [0] + units(2)) + op("past", key(3) + [0] + units(1) + [0])
    out["blocking_deadlines"] = b

    # Key handles: lock-free grants and releases while nothing is queued, the headroom and
    # the cap still enforced there, the lock once a request queues (a release through the
    # handle then hands off), and the counters kept across put.
    b = config(6, classes=2, headroom=(2,)) + handle(1) + handle(2)
    b += try_(1, 0, 2) + VIA_HANDLE + try_(1, 1, 3) + VIA_HANDLE  # class 1: 2 + 3 > 6 - 2
    b += try_(1, 1, 2) + VIA_HANDLE + try_(2, 0, 2) + VIA_HANDLE + try_(2, 0, 1) + BY_ID
    b += release(0, "one") + VIA_HANDLE + release(1, "one") + BY_ID
    b += key_set(2, 1, cap=1) + try_(2, 0, 1) + VIA_HANDLE  # cap 2: held 2, refused
    b += async_(0, 3, 0, 4) + try_(1, 0, 1) + VIA_HANDLE  # queued: the lock decides
    b += release(0, "all") + VIA_HANDLE + release(0, "all") + VIA_HANDLE
    b += key_set(1, 1, reserve=0) + try_(1, 0, 1) + VIA_HANDLE  # reserved: the lock
    b += op("destroy_busy") + handle(2) + op("key_unset", key(2)) + release(0, "all") + VIA_HANDLE
    b += op("close") + try_(1, 0, 1) + VIA_HANDLE + release(0, "all")  # key 3's: by id
    b += op("recreate") + config(3) + handle(0) + try_(0, 0, 3) + VIA_HANDLE
    b += release(0, "all") + VIA_HANDLE + handle(0)
    out["handles"] = b

    rnd = random.Random(0xFA17)
    for j in (1, 2):
        out["random_%d" % j] = [rnd.randrange(256) for _ in range(3000)]
    return out


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in seeds().items():
        with open(os.path.join(OUT, name), "wb") as fp:
            fp.write(bytes(data))


if __name__ == "__main__":
    main()
