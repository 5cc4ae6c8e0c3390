#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_door into fuzz/corpus/fuzz_door/.

Each seed is an operation sequence in the byte format that tests/model/door_model.c
decodes (see setup(), amount() and decode() there); this script documents that format by
example. Run it from anywhere:  python3 fuzz/make_door_corpus.py
model_door replays every file of the corpus in each build. Regenerate the files only when
the byte format changes, and keep what libFuzzer found with `fuzz_door -merge=1 ...`.
"""
import os
import random

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_door")

NONE, PLAIN, BUDGET = 0, 1, 2
MAX = (1 << 61) - 1


def door(sem=PLAIN, cap=1, rate=False, tokens=1, burst=1, period_byte=250, backlog=0,
         classes=1, wait=False, hb=0):
    """The five bytes that choose a door; hb is the headroom byte (see setup())."""
    assert 1 <= cap <= 8 and 1 <= tokens <= 3 and 1 <= burst <= 6 and 1 <= classes <= 3
    b0 = sem + 3 * (cap - 1)
    b1 = (1 if rate else 0) | ((tokens - 1) << 1) | ((burst - 1) << 3)
    b3 = backlog | ((classes - 1) << 2) | ((1 if wait else 0) << 4)
    return [b0, b1, period_byte, b3, hb]


def amount(n, cap):
    """An amount byte for 1 <= n <= cap + 3 (the second range of amount())."""
    for b in range(160, 232):
        if 1 + b % (cap + 3) == n:
            return b
    raise ValueError(n)


MAX_PLUS_1 = 246  # BAND_MAX_UNITS + 1
U64_MAX = 250     # UINT64_MAX
ZERO = 232


def admit(cls, amount_byte, slot, job=False, forever=True):
    return [0, cls, amount_byte, (1 if job else 0) | (2 if forever else 0) | (slot << 2)]


def admit_bad_class():
    return [0, 15, 0, 2]


def done(slot, mode=0):  # mode 5 measures, 6 an hour ahead, 7 negative
    return [80, slot | (mode << 3)]


def take(amount_byte, slot):
    return [120, amount_byte, slot]


def release(slot):
    return [134, slot]


def async_(waiter, units):  # units 1 + byte % (cap + 1)
    return [148, waiter, units - 1]


def cancel(waiter):
    return [158, waiter]


def wrelease(waiter):
    return [165, waiter]


def rate(n):  # 1 + byte % (burst + 1)
    return [172, n - 1]


def tick(b):
    return [184, b]


def recv():
    return [218]


def close(which):  # 0 door, 1 semaphore, 2 rate, 3 backlog
    return [230, which]


def recreate(cfg):
    return [231] + cfg


SEEDS = {
    # A wait that times out, a deadline already past, and tokens gone before a wait: none
    # of them spends a token (both or neither).
    "wait_spends_no_tokens": door(PLAIN, 1, rate=True, burst=3, wait=True)
    + admit(0, amount(1, 1), 0)
    + admit(0, amount(1, 1), 1)
    + admit(0, amount(1, 1), 1, forever=False)
    + done(0)
    + admit(0, amount(1, 1), 0)
    + rate(1)
    + admit(0, amount(1, 1), 2)
    + tick(255) + tick(255)
    + admit(0, amount(1, 1), 2)
    + done(0) + admit(0, amount(1, 1), 3),
    # Requests that can never be admitted: above a budget, above what the class leaves
    # after its headroom, above any semaphore, above the rate's burst (with a job and a
    # backlog: never queued for later).
    "never_fits": door(BUDGET, 4, rate=True, burst=2, backlog=1, classes=2, hb=0b0100)
    + admit(1, amount(5, 4), 0)
    + admit(1, amount(4, 4), 0)
    + admit(0, MAX_PLUS_1, 0)
    + admit(0, U64_MAX, 0, job=True)
    + admit(0, amount(3, 4), 0, job=True)
    + admit(0, amount(2, 4), 0)
    + admit(0, amount(3, 4), 1, job=True)
    + admit(1, amount(1, 4), 1)
    + done(0) + admit(1, amount(1, 4), 1) + recv(),
    # done() misuse: more than the door handed out, an admission in the future or before
    # 0, a second done() of one admission, and a measured hold time.
    "done_misuse": door(PLAIN, 4)
    + take(amount(2, 4), 1)
    + admit(0, amount(1, 4), 0)
    + done(1) + done(0, 6) + done(0, 7) + done(0, 5) + done(0)
    + release(1) + admit(0, amount(4, 4), 2) + admit(0, amount(1, 4), 3) + done(2, 5),
    # Other users queue on the door's semaphore (try never barges past them), a partial
    # grant, cancels, then the semaphore closes: GONE.
    "waiters_and_close": door(PLAIN, 3, wait=True)
    + take(amount(2, 3), 0)
    + async_(0, 3) + async_(1, 1)
    + admit(0, amount(1, 3), 1)
    + release(0) + wrelease(0)
    + async_(2, 4) + async_(3, 2) + admit(0, amount(1, 3), 1)
    + cancel(2) + wrelease(1) + close(1)
    + admit(0, amount(1, 3), 1) + release(1),
    # Accepted for later while the backlog has room, then busy; a worker drains it.
    "backlog_later": door(PLAIN, 1, backlog=2)
    + admit(0, amount(1, 1), 0, job=True)
    + admit(0, amount(1, 1), 1, job=True)
    + admit(0, amount(1, 1), 1, job=True)
    + admit(0, amount(1, 1), 1, job=True)
    + recv() + admit(0, amount(1, 1), 1, job=True) + close(3)
    + admit(0, amount(1, 1), 1, job=True) + recv() + recv() + recv() + done(0),
    # Shedding by class, a class whose headroom is above the maximum (refused at create),
    # a closed door, and a new door.
    "shed_and_recreate": door(PLAIN, 6, classes=3, hb=0b11010100 | 1)
    + admit(2, amount(1, 6), 0)
    + admit(1, amount(4, 6), 0)
    + admit(1, amount(1, 6), 1)
    + admit(0, amount(2, 6), 1)
    + admit_bad_class()
    + admit(1, ZERO, 2)
    + close(0) + admit(0, amount(1, 6), 2) + done(0) + done(1)
    + recreate(door(NONE, 2, rate=True, tokens=2, burst=4, period_byte=10))
    + admit(0, amount(4, 2), 0) + admit(0, amount(1, 2), 0) + done(0, 5) + done(0, 7)
    + rate(2) + tick(64) + admit(0, amount(1, 2), 0) + close(2) + admit(0, amount(1, 2), 0),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes(data))
    rng = random.Random(0x646F6F72)
    for i in range(1, 4):
        with open(os.path.join(OUT, "random_%d" % i), "wb") as f:
            f.write(bytes(rng.randrange(256) for _ in range(1500)))


if __name__ == "__main__":
    main()
