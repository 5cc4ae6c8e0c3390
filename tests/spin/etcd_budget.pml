/* SPDX-License-Identifier: MIT */
/*
 * etcd_budget.pml - the etcd budget protocol of libband-etcd (adapters/etcd/include/band/etcd.h,
 * docs/etcd.md), checked by spin through tests/spin/run_spin.sh.
 *
 * Run one property:   tests/spin/run_spin.sh tests/spin/etcd_budget.pml MODE
 *                     (MODE: s1 s1-lease s2 s3 fence l1 multi; the script lists them)
 * Run them all:       ctest -L etcd-model  (tests spin_etcd_<mode>, tests/spin.cmake)
 * By hand:            spin -DCHECK_S1 -a etcd_budget.pml && cc -O2 -DNOCLAIM -o pan pan.c
 *                     && ./pan        (add -DBUG_... to spin to see a broken variant fail;
 *                     spin -t -p with the same -D options replays its trail)
 *
 * What is modelled
 *   The store: one revision counter; per budget the capacity key (value and mod revision);
 *   per budget and client one queue key (present, units, granted flag, create revision, mod
 *   revision). A key's lease owner is its client (slot index); each client has one lease
 *   (alive flag and generation). The store changes only inside d_step/atomic blocks, one
 *   block per etcd transaction with its compares, so each block is one linearizable txn that
 *   takes one revision (as etcd does; a lease revoke that deletes keys takes one too).
 *   Clients (K = 3): NACQ acquisitions for client 0, NACQ_OTHERS for the others, of weight 1..MAXW in every budget of the
 *   request (weights never exceed the smallest capacity the admin sets):
 *     - a view read for the fast path, then the fast-path txn (compare: nothing in the
 *       budget's range has a mod revision above the view's) when the view shows room, else
 *       the plain put of an ungranted key;
 *     - while waiting: read a view, evaluate the grant rule on it, try the mark txn
 *       (compares: the capacity's mod revision as read, the own key's create revision);
 *       when the rule does not grant, block until the store's revision passes the view's
 *       (the watch from the view's revision + 1) or the lease is reported lost;
 *     - hold (optionally send one piece of work with the token to the resource), release
 *       (delete; a no-op when the key is gone).
 *   A view is read key by key, each key at its own moment (the view's revision with the
 *   capacity key and the first queue key), and any number of other txns may run between
 *   it and its use: weaker than etcd's consistent range, so every stale view a real
 *   client could act on (a late watch event, a slow HTTP answer) is covered.
 *   An admin process changes the capacity CHANGES times, each at any moment or never:
 *   first lowered to CAPMIN (holders may then owe a debt), then raised to CAPMAX (or, with
 *   RAISE_FIRST, from a start at CAPMIN, raised first).
 *   Lease expiry (EXPIRIES times): deletes every key of one client in one revision; the
 *   client learns of it later, at any point (on_lost), stops using its grant (sends no
 *   more work), ends a waiting request, and takes a new lease for later requests. A put
 *   under the dead lease fails.
 *   The resource (fencing run): accepts a piece of work only if check_token finds a granted
 *   key whose mod revision is the token, read atomically (a linearizable range).
 *   With -DMULTI there are two budgets and client 0 makes two-part requests (one key per
 *   budget, created in one txn, so one create revision, granted in one txn); client 1 uses
 *   budget 0, client 2 budget 1.
 *
 * What is abstracted
 *   HTTP, JSON, endpoints and failover, timeouts and retries (a retried write is
 *   idempotent and read back, so it is one txn here), the watch stream (its delivery delays
 *   are the stale views; an event is "the revision moved"), key names (a slot per client),
 *   keepalive timing (expiry is a free nondeterministic event), try_acquire and cancel
 *   (both only delete keys, like release), the capacity's creation (present at revision 1).
 *
 * Properties (one spin run each; run_spin.sh names the modes)
 *   S1 (-DCHECK_S1)     at every grant commit (mark txn and fast-path txn) the units of the
 *                       granted keys, the new one included, fit in the capacity at that
 *                       moment: assert inside the txn.
 *   S2 (-DCHECK_S2)     fencing tokens (the grant txn's revision) strictly increase in grant
 *                       order, hence are unique: assert against the global last_token. Run
 *                       on the MULTI model, where grant order and create order can differ.
 *   S3 (ltl s3)         grants are a prefix of every queue: never a granted key with an
 *                       ungranted key of smaller create revision present in its budget.
 *   FENCE (-DCHECK_FENCE) the resource never accepts work whose holder's lease (the one the
 *                       grant was made under) has ended by the time of the check.
 *   L1 (ltl l1, -DLIVENESS) every waiting request is eventually granted, under weak
 *                       fairness (pan -a -f), with holders that always release and no lease
 *                       expiry: expiry only deletes keys, so it can only bring a waiter's turn
 *                       closer (or end the waiter), and leaving it out keeps the fairness run
 *                       small. The model is finite (revisions only grow), so a starving run is
 *                       one that ends, or cycles elsewhere, with a request still waiting.
 *   Every safety run also reports invalid end states: a client blocked forever.
 *
 * Broken variants (each must make its run fail; run_spin.sh checks that they do)
 *   BUG_NO_CAP_COMPARE   the mark txn does not compare the capacity's mod revision (S1).
 *   BUG_FAST_NO_COMPARE  the fast-path txn does not compare the budget's range (S1).
 *   BUG_BARGE            the grant rule ignores ungranted keys ahead (S3).
 *   BUG_TOKEN_CREATE     the token is the key's create revision (S2, MULTI).
 *   BUG_NO_FENCE         the resource accepts work without check_token (FENCE).
 *   BUG_FENCE_BY_HOLDER  the resource accepts work while its client holds any grant,
 *                        whatever the token (FENCE: work sent under an ended lease and
 *                        checked after the client's next grant).
 *   BUG_LOST_WAKEUP      the watch starts after the view was read, not from its revision
 *                        (L1).
 *   BUG_FIRST_PART_ONLY  a two-part request is judged and compared on its first budget
 *                        only (S1, MULTI).
 *
 * Sizes checked (run_spin.sh has the exact options; exhaustive searches, pan -DCOLLAPSE,
 * no depth truncation; states stored for the real model, the broken variants stop at their
 * first error). Always K = 3 clients, MAXW = 2, capacity 3 at start; each client one
 * acquisition unless said otherwise:
 *   s1        CHANGES = 2 (lowered to 2, raised to 3), no expiry      7.1 M states
 *   s1-lease  CHANGES = 1, EXPIRIES = 1                               18.5 M states
 *   s2        MULTI, CHANGES = 1, no expiry                            5.1 M states
 *   s3        CHANGES = 1, EXPIRIES = 1, never claim s3               18.5 M states
 *   fence     client 0 acquires twice (a new lease after expiry), MAXW = 1,
 *             capacity 2, no change, EXPIRIES = 1                     17.7 M states
 *   l1        LIVENESS, CHANGES = 1, never claim l1, weak fairness     2.5 M states
 *             and from capacity 2, raised to 3 (RAISE_FIRST)
 *   multi     MULTI, CHANGES = 1, no expiry: S1 (5.0 M states), S3; then L1 with
 *             CHANGES = 0 (0.4 M states)
 * Larger sizes (two acquisitions for every client with changes and expiry) exceed the
 * 2 GB and one minute a run may take: the revision counter makes every interleaving of
 * txns a distinct state.
 */

#define K 3
#ifndef NACQ
#define NACQ 2   /* acquisitions of client 0 */
#endif
#ifndef NACQ_OTHERS
#define NACQ_OTHERS 1   /* acquisitions of each other client */
#endif
#ifndef MAXW
#define MAXW 2   /* weights 1..MAXW, never above CAPMIN */
#endif
#ifndef CAP0
#define CAP0 3   /* the capacity at start */
#endif
#define CAPMIN 2
#define CAPMAX 3
#ifndef CHANGES
#define CHANGES 2
#endif
#ifdef LIVENESS
#undef EXPIRIES
#define EXPIRIES 0
#endif
#ifndef EXPIRIES
#define EXPIRIES 1
#endif
#ifdef MULTI
#define NB 2
#else
#define NB 1
#endif

#define IDX(b, j) ((b) * K + (j))

typedef key_t {
    bit present;
    bit g;      /* granted */
    byte units;
    byte crev;  /* create revision: the queue order */
    byte mrev;  /* mod revision: the token once granted */
};

/* The store. */
byte rev = 1;            /* the capacity keys were created at revision 1 */
byte cap[NB] = CAP0;
byte cap_mod[NB] = 1;
key_t q[NB * K];         /* q[IDX(b, i)]: client i's key in budget b, under lease i */
bit lease_alive[K] = 1;
byte lease_gen[K];       /* the client's current lease, counted */

/* Observers (not part of the store). */
bit waiting[K];          /* client i has a key queued and not granted */
#ifdef CHECK_S2
byte last_token;
#endif
#ifdef CHECK_FENCE
/* One piece of work in flight to the resource: its client, token and lease generation. */
bit work_full;
byte work_c, work_t, work_g;
#endif

#ifdef CHECK_S1
#define S1(x) assert(x)
#else
#define S1(x) skip
#endif

/* S3: in budget b, key k granted while key j, ahead of it, is not. */
#define BARGED(b, j, k) (q[IDX(b, k)].present && q[IDX(b, k)].g && q[IDX(b, j)].present && \
                         !q[IDX(b, j)].g && q[IDX(b, j)].crev < q[IDX(b, k)].crev)
#define PREFIX(b) (!BARGED(b, 0, 1) && !BARGED(b, 0, 2) && !BARGED(b, 1, 0) && \
                   !BARGED(b, 1, 2) && !BARGED(b, 2, 0) && !BARGED(b, 2, 1))
#ifdef MULTI
#define PREFIX_OK (PREFIX(0) && PREFIX(1))
#else
#define PREFIX_OK (PREFIX(0))
#endif

ltl s3 { [] PREFIX_OK }
ltl l1 { [] ((waiting[0] -> <> !waiting[0]) && (waiting[1] -> <> !waiting[1]) &&
             (waiting[2] -> <> !waiting[2])) }

#define PART(b) ((parts >> (b)) & 1)

/* The units held in every budget of the request fit (S1), and the token is after every
 * earlier one (S2). Runs inside the grant txn, after the own keys were marked. */
inline grant_checks() {
    for (b : 0 .. NB - 1) {
        if
        :: PART(b) ->
            sum = 0;
            for (j : 0 .. K - 1) {
                if
                :: q[IDX(b, j)].present && q[IDX(b, j)].g -> sum = sum + q[IDX(b, j)].units
                :: else -> skip
                fi
            }
            S1(sum <= cap[b])
        :: else -> skip
        fi
    }
#ifdef CHECK_S2
    assert(token > last_token);
    last_token = token;
#endif
    sum = 0; b = 0; j = 0
}

/* Read key j of budget b into the view, folded into the grant rule at once: ok stays 1
 * while every key ahead (every key, for a request not queued yet: mycrev 0) is granted;
 * sum adds their units; after the budget's last key, ok also needs sum + w <= the
 * capacity read. */
inline read_key(b, j, last) {
    d_step {
        if
        :: !last ->
            vcapmod[b] = cap_mod[b];
            vcap = cap[b];
            if
            :: b == first -> R = rev; ok = 1
            :: else -> skip
            fi
        :: else -> skip
        fi;
        if
        :: q[IDX(b, j)].present && (mycrev == 0 || q[IDX(b, j)].crev < mycrev) ->
#ifdef BUG_BARGE
            if
            :: q[IDX(b, j)].g -> sum = sum + q[IDX(b, j)].units
            :: else -> skip
            fi
#else
            if
            :: !q[IDX(b, j)].g -> ok = 0
            :: else -> skip
            fi;
            sum = sum + q[IDX(b, j)].units
#endif
        :: else -> skip
        fi;
        if
        :: last ->
            if
            :: sum + w[b] > vcap -> ok = 0
            :: else -> skip
            fi;
            sum = 0;
            vcap = 0
        :: else -> skip
        fi
    }
}

/* Budget b's part of the view: its capacity key (with the view's revision R when it is the
 * request's first budget: read first, so the watch from R + 1 misses nothing) at the moment
 * of the first other client's key, then the second other client's key. */
inline read_budget(b) {
    if
    :: PART(b) ->
        read_key(b, (i + 1) % K, 0);
        read_key(b, (i + 2) % K, 1)
    :: else -> skip
    fi
}

/* A view, read key by key (each read one moment of the store), folded into the grant rule:
 * ok when, in every budget of the request, the keys ahead are granted and their units plus
 * w fit in the capacity read. R is the view's revision. */
inline read_view() {
    read_budget(0);
#ifdef MULTI
#ifdef BUG_FIRST_PART_ONLY
    if
    :: first == 1 -> read_budget(1)
    :: else -> skip
    fi;
#else
    read_budget(1);
#endif
#endif
#ifdef BUG_LOST_WAKEUP
    R = rev;
#endif
    skip
}

/* The keys of the request, created in one txn: granted when the compare holds (fast path:
 * nothing in the range changed since R), else queued. A put under a dead lease fails. */
inline enqueue(fast) {
    d_step {
        if
        :: lease_alive[i] ->
            ok = fast;
            for (b : 0 .. NB - 1) {
                if
                :: PART(b) && fast ->
#ifndef BUG_FAST_NO_COMPARE
                    if
                    :: cap_mod[b] > R -> ok = 0
                    :: else -> skip
                    fi;
                    for (j : 0 .. K - 1) {
                        if
                        :: q[IDX(b, j)].present && q[IDX(b, j)].mrev > R -> ok = 0
                        :: else -> skip
                        fi
                    }
#endif
                    skip
                :: else -> skip
                fi
            }
            rev++;
            mycrev = rev;
            for (b : 0 .. NB - 1) {
                if
                :: PART(b) ->
                    q[IDX(b, i)].present = 1;
                    q[IDX(b, i)].g = ok;
                    q[IDX(b, i)].units = w[b];
                    q[IDX(b, i)].crev = rev;
                    q[IDX(b, i)].mrev = rev
                :: else -> skip
                fi
            }
            if
            :: ok ->
                granted = 1;
#ifdef BUG_TOKEN_CREATE
                token = mycrev;
#else
                token = rev;
#endif
                grant_checks()
            :: else -> waiting[i] = 1
            fi
        :: else -> lost = 1
        fi;
        ok = 0; b = 0; j = 0; R = 0;
        for (b : 0 .. NB - 1) { vcapmod[b] = 0 }
        b = 0
    }
}

/* The mark txn: compares the capacity's mod revision read in the view (every budget) and
 * the own key's create revision; success marks every part granted. A missing own key means
 * the lease ended: the request is over. */
inline mark() {
    d_step {
        if
        :: !q[IDX(first, i)].present || q[IDX(first, i)].crev != mycrev ->
            lost = 1;
            waiting[i] = 0
        :: else ->
            ok = 1;
#ifndef BUG_NO_CAP_COMPARE
            for (b : 0 .. NB - 1) {
                if
#ifdef BUG_FIRST_PART_ONLY
                :: b == first && cap_mod[b] != vcapmod[b] -> ok = 0
#else
                :: PART(b) && cap_mod[b] != vcapmod[b] -> ok = 0
#endif
                :: else -> skip
                fi
            }
#endif
            if
            :: ok ->
                rev++;
                for (b : 0 .. NB - 1) {
                    if
                    :: PART(b) ->
                        q[IDX(b, i)].g = 1;
                        q[IDX(b, i)].mrev = rev
                    :: else -> skip
                    fi
                }
                granted = 1;
                waiting[i] = 0;
#ifdef BUG_TOKEN_CREATE
                token = mycrev;
#else
                token = rev;
#endif
                grant_checks()
            :: else -> skip
            fi
        fi;
        ok = 0; b = 0; j = 0
    }
}

/* Release: delete every part (one txn); nothing when the keys are gone already. */
inline release() {
    d_step {
        if
        :: q[IDX(first, i)].present && q[IDX(first, i)].crev == mycrev ->
            rev++;
            for (b : 0 .. NB - 1) {
                if
                :: PART(b) ->
                    q[IDX(b, i)].present = 0;
                    q[IDX(b, i)].g = 0;
                    q[IDX(b, i)].units = 0;
                    q[IDX(b, i)].crev = 0;
                    q[IDX(b, i)].mrev = 0
                :: else -> skip
                fi
            }
        :: else -> skip
        fi;
        b = 0
    }
}

proctype client(byte i) {
    byte n, b, j, R, sum, vcap, mycrev, token, gen, parts, first;
    byte w[NB], vcapmod[NB];
    bit ok, granted, lost;

#ifdef MULTI
    if
    :: i == 0 -> parts = 3
    :: i == 1 -> parts = 1
    :: else -> parts = 2; first = 1
    fi;
#else
    parts = 1;
#endif
    do
    :: (i == 0 && n < NACQ) || (i != 0 && n < NACQ_OTHERS) ->
        n++;
        atomic {
            for (b : 0 .. NB - 1) {
                if
                :: PART(b) -> select(sum : 1 .. MAXW); w[b] = sum; sum = 0
                :: else -> skip
                fi
            }
            b = 0
        }

        /* The view the fast path decides on: it may be as old as the client's watch. */
        read_view();
        if
        :: ok -> enqueue(1)
        :: else -> enqueue(0)
        fi;

        do
        :: granted || lost -> break
        :: !granted && !lost && !lease_alive[i] -> d_step { lost = 1; waiting[i] = 0 }
        :: !granted && !lost ->
            read_view();
            if
            :: ok -> mark()
            :: else -> (rev != R || !lease_alive[i])  /* a watch event, or on_lost */
            fi;
            d_step {
                R = 0;
                for (b : 0 .. NB - 1) { vcapmod[b] = 0 }
                b = 0
            }
        od;

        if
        :: granted ->
#ifdef CHECK_FENCE
            if
            :: atomic { !work_full -> work_full = 1; work_c = i; work_t = token; work_g = gen }
            :: skip
            fi;
#endif
            if
            :: release()
            :: !lease_alive[i] -> lost = 1  /* on_lost: stop using the grant */
            fi
        :: else -> skip
        fi;

        if
        :: lost ->
#ifdef LIVENESS
            assert(false);  /* no expiry in the liveness run */
#endif
            d_step {
                assert(!lease_alive[i]);
                lease_gen[i]++;
                lease_alive[i] = 1;
                gen = lease_gen[i];
                lost = 0
            }
        :: else -> skip
        fi;
        d_step {
            granted = 0; token = 0; mycrev = 0;
            for (b : 0 .. NB - 1) { w[b] = 0; vcapmod[b] = 0 }
            b = 0
        }
    :: else -> break
    od
}

/* The operator: lowers the capacity to CAPMIN, then raises it back to CAPMAX (with
 * RAISE_FIRST: raises, then lowers), each at any moment or never (in MULTI, in a budget of
 * its choice each time). */
active proctype admin() {
    byte x, b;
    do
    :: x < CHANGES ->
        atomic {
#ifdef MULTI
            select(b : 0 .. NB - 1);
#endif
            rev++;
#ifdef RAISE_FIRST
            if
            :: x % 2 == 0 -> cap[b] = CAPMAX
            :: else -> cap[b] = CAPMIN
            fi;
#else
            if
            :: x % 2 == 0 -> cap[b] = CAPMIN
            :: else -> cap[b] = CAPMAX
            fi;
#endif
            cap_mod[b] = rev;
            x++;
            b = 0
        }
    :: break
    od
}

active proctype expiry() {
    byte x = EXPIRIES, c, b;
    bit any;
    do
    :: x > 0 ->
        atomic {
            x--;
            select(c : 0 .. K - 1);
            if
            :: lease_alive[c] ->
                for (b : 0 .. NB - 1) {
                    if
                    :: q[IDX(b, c)].present ->
                        any = 1;
                        q[IDX(b, c)].present = 0;
                        q[IDX(b, c)].g = 0;
                        q[IDX(b, c)].units = 0;
                        q[IDX(b, c)].crev = 0;
                        q[IDX(b, c)].mrev = 0
                    :: else -> skip
                    fi
                }
                if
                :: any -> rev++
                :: else -> skip
                fi;
                waiting[c] = 0;
                lease_alive[c] = 0
            :: else -> skip
            fi;
            c = 0; b = 0; any = 0
        }
    :: break
    od
}

#ifdef CHECK_FENCE
/* The protected resource: check_token is one linearizable range of the budget. */
active proctype resource() {
    byte j;
    bit valid;
end:
    do
    :: work_full ->
        d_step {
            for (j : 0 .. NB * K - 1) {
                if
                :: q[j].present && q[j].g && q[j].mrev == work_t -> valid = 1
                :: else -> skip
                fi
            }
#ifdef BUG_NO_FENCE
            valid = 1;
#endif
#ifdef BUG_FENCE_BY_HOLDER
            valid = q[IDX(0, work_c)].present && q[IDX(0, work_c)].g;
#endif
            if
            :: valid -> assert(lease_alive[work_c] && lease_gen[work_c] == work_g)
            :: else -> skip
            fi;
            work_full = 0; work_c = 0; work_t = 0; work_g = 0; j = 0; valid = 0
        }
    od
}
#endif

init {
    byte i;
    atomic {
        for (i : 0 .. K - 1) { run client(i) }
        i = 0
    }
}
