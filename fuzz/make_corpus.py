#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Write the seed corpus of fuzz_sem into fuzz/corpus/fuzz_sem/.

Each seed is an operation sequence in the byte format that tests/model/sem_model.c
decodes (see decode_op() and the op_* functions there); this script documents that format
by example. Run it from anywhere:  python3 fuzz/make_corpus.py
The files are small and stable; regenerate them only when the byte format changes, and
keep what libFuzzer found with `fuzz_sem -merge=1 ...` (fuzz/README.md).
"""
import os

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "corpus", "fuzz_sem")

NO_REENTER, REENTER = 1, 0  # the byte after each op byte: (b & 7) == 0 -> wakes call back in


def create(budget, n):
    assert 0 <= n <= 32
    return [1 if budget else 0, n]


def small(v):  # an amount 0..8
    return [0, v]


def medium(v):  # an amount 0..64
    return [7, v]


def near_max(d):  # BAND_MAX_UNITS - d, d in 0..3
    return [13, d]


def above_max(d):  # BAND_MAX_UNITS + 1 + d
    return [14, d]


def u64_max(d):  # UINT64_MAX - d
    return [0x4F, d]


def try_(amount, budget=False, via=0, reenter=False):
    return [1, REENTER if reenter else NO_REENTER] + amount + ([via] if budget else [])


def async_(slot, amount, budget=False, via=0, reenter=False):
    return [30, REENTER if reenter else NO_REENTER, slot] + amount + ([via] if budget else [])


def release_held(sel, amount=None, budget=False, via=0, reenter=False):
    out = [70, REENTER if reenter else NO_REENTER, sel]
    if sel & 3 == 3:
        out += amount
    return out + ([via] if budget else [])


def release_any(amount, budget=False, via=0, reenter=False):
    return [110, REENTER if reenter else NO_REENTER] + amount + ([via] if budget else [])


def reduce_(amount):
    return [125, NO_REENTER] + amount


def drain(amount):
    return [140, NO_REENTER] + amount


def cancel(slot, reason, reenter=False):  # reason: 0 ECANCELED, 3 ETIMEDOUT, 6 ECLOSED, 7 bad
    return [150, REENTER if reenter else NO_REENTER, reason, slot]


def stats():
    return [190, NO_REENTER]


def acquire_past(amount, budget=False, via=0):
    return [205, NO_REENTER] + amount + ([via] if budget else []) + [0]


def grow(amount, reenter=False):
    return [215, REENTER if reenter else NO_REENTER] + amount


def shrink(amount, reenter=False):
    return [225, REENTER if reenter else NO_REENTER] + amount


def destroy_busy():
    return [251, NO_REENTER]


def close(budget=False, reenter=False):
    return [253, REENTER if reenter else NO_REENTER] + ([0] if budget else [])


def recreate(budget, n):
    return [254, NO_REENTER] + create(budget, n)


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


SEEDS = {
    # Three left, the head wants five, a one-unit waiter behind it waits too.
    "head_of_line": create(False, 3)
    + async_(0, small(5))
    + async_(1, small(1))
    + try_(small(1))
    + release_any(small(1))
    + release_any(small(1))
    + release_any(small(1))
    + stats(),
    # Cancel a partially granted head: its permits repay the debt, then go on.
    "cancel_partial_head": create(False, 3)
    + async_(0, small(5))
    + async_(1, small(2))
    + reduce_(small(2))
    + cancel(0, 0)
    + release_any(small(1))
    + cancel(1, 3)
    + stats(),
    # Debt repaid before waiters; drain creates no debt.
    "debt_and_drain": create(False, 8)
    + try_(small(8))
    + reduce_(small(3))
    + async_(2, small(1))
    + release_held(1)
    + release_held(1)
    + release_held(1)
    + release_held(1)
    + drain(small(8))
    + release_held(0),
    # Overflow on release, with waiters, and of the debt.
    "overflow": create(False, 0)
    + async_(0, small(5))
    + release_any(above_max(3))
    + release_any(u64_max(0))
    + reduce_(near_max(0))
    + reduce_(small(1))
    + release_any(near_max(0))
    + stats(),
    # Close with pending waiters (wakes call back in), then recreate.
    "close_pending": create(False, 1)
    + async_(0, small(3))
    + async_(1, small(1))
    + async_(2, small(2))
    + destroy_busy()
    + close(reenter=True)
    + try_(small(0))
    + release_any(small(2))
    + cancel(0, 0)
    + recreate(False, 4)
    + async_(0, small(2)),
    # A budget: E2BIG at once, shrink failing queued requests, grow.
    "budget_shrink_grow": create(True, 10)
    + try_(small(6), budget=True)
    + async_(0, small(8), budget=True)
    + async_(1, small(3), budget=True, via=1)
    + async_(2, medium(9), budget=True)
    + async_(3, small(2), budget=True)
    + try_(medium(11), budget=True)
    + shrink(small(3), reenter=True)
    + grow(small(4))
    + release_held(0, budget=True)
    + acquire_past(medium(12), budget=True)
    + stats(),
    # Wakes that call back into the same semaphore while several complete at once.
    "reentrant_wakes": create(False, 0)
    + async_(0, small(1))
    + async_(1, small(2))
    + async_(2, small(1))
    + async_(3, small(4))
    + release_any(small(8), reenter=True)
    + cancel(3, 0, reenter=True)
    + cancel(1, 0)
    + stats(),
    # Long pseudo-random sequences (the same generator model_sem uses).
    "random_1": splitmix_bytes(1, 2048),
    "random_2": splitmix_bytes(2, 2048),
}


def main():
    os.makedirs(OUT, exist_ok=True)
    for name, data in SEEDS.items():
        with open(os.path.join(OUT, name), "wb") as f:
            f.write(bytes(data))
    print(f"wrote {len(SEEDS)} files to {OUT}")


if __name__ == "__main__":
    main()
