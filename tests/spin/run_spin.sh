#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run_spin.sh MODEL MODE - check one property of the etcd budget model with spin.
#
# For MODE the script runs the real model, which must pass (errors: 0 over a complete,
# exhaustive search: no depth truncation, no memory exhaustion), then every broken variant
# of that property, each of which must fail for the expected reason (the matching assert,
# claim or acceptance cycle), so the check cannot pass vacuously. Each run: spin -a in a
# temporary directory, pan compiled with $CC -O2, a bounded depth (-m) and memory
# (-DMEMLIM, in MB), a wall-time bound; its state count, depth and time are printed.
#
# Modes (the model's header says what each property means):
#   s1       capacity at every grant; capacity lowered and raised
#   s1-lease capacity at every grant, with a lease expiry
#   s2       tokens strictly increasing in grant order (two budgets)
#   s3       grants a prefix of the queue (never claim s3)
#   fence    the resource refuses work of an ended lease (client 0 acquires again under a
#            new lease)
#   l1       no starvation under weak fairness (never claim l1, pan -a -f), with the
#            capacity lowered, and with it raised
#   multi    S1, S3 and L1 with a two-budget request
#
# Environment: SPIN (default spin), CC (default cc), SPIN_MEMLIM (MB, default 2048),
# SPIN_TIME (seconds per pan run, default 150).
set -u
export LC_ALL=C

MODEL=${1:?usage: run_spin.sh MODEL MODE}
MODE=${2:?usage: run_spin.sh MODEL MODE}
SPIN=${SPIN:-spin}
CC=${CC:-cc}
MEMLIM=${SPIN_MEMLIM:-2048}
TIME=${SPIN_TIME:-150}
DEPTH=100000

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
cp "$MODEL" "$T/model.pml" || exit 1

# A run: NAME SPIN_DEFINES CC_DEFINES PAN_ARGS; leaves pan's output in $T/out.
run() {
    local name=$1 defs=$2 ccdefs=$3 panargs=$4 start end
    local -a defs_a ccdefs_a panargs_a
    read -r -a defs_a <<<"$defs"
    read -r -a ccdefs_a <<<"$ccdefs"
    read -r -a panargs_a <<<"$panargs"
    rm -f "$T"/pan "$T"/pan.* "$T"/*.trail
    if ! (cd "$T" && "$SPIN" "${defs_a[@]}" -a model.pml >"$T/spin.out" 2>&1); then
        echo "FAIL: $name: spin -a $defs" >&2
        cat "$T/spin.out" >&2
        exit 1
    fi
    if ! (cd "$T" && "$CC" -O2 -w -DMEMLIM="$MEMLIM" "${ccdefs_a[@]}" -o pan pan.c >"$T/cc.out" 2>&1); then
        echo "FAIL: $name: $CC $ccdefs pan.c" >&2
        cat "$T/cc.out" >&2
        exit 1
    fi
    start=$(date +%s.%N)
    (cd "$T" && timeout "$TIME" ./pan -m"$DEPTH" "${panargs_a[@]}" >"$T/out" 2>&1)
    echo "rc=$?" >>"$T/out"
    end=$(date +%s.%N)
    printf '%s: %s states stored, %s transitions, depth reached %s, %.1f s (spin %s; cc %s; pan %s)\n' \
        "$name" \
        "$(awk '/states, stored/ {print $1; exit}' "$T/out")" \
        "$(awk '/transitions \(=/ {print $1; exit}' "$T/out")" \
        "$(sed -n 's/.*depth reached \([0-9]*\).*/\1/p' "$T/out" | head -n 1)" \
        "$(awk -v a="$start" -v b="$end" 'BEGIN {print b - a}')" "$defs" "$ccdefs" "$panargs"
}

show() {
    echo "--- pan output:" >&2
    cat "$T/out" >&2
}

# The real model: errors 0 over a complete exhaustive search.
expect_pass() {
    run "$@"
    local name=$1
    if ! grep -q '^Full statespace search' "$T/out"; then
        echo "FAIL: $name: no full state-space search" >&2; show; exit 1
    fi
    if grep -qE 'max search depth too small|Search not completed|out of memory|rc=124' "$T/out"; then
        echo "FAIL: $name: the search was incomplete (depth, memory or time)" >&2; show; exit 1
    fi
    if ! grep -qE 'errors: 0$' "$T/out"; then
        echo "FAIL: $name: spin found an error" >&2; show; exit 1
    fi
    if ! grep -q '^rc=0$' "$T/out"; then
        echo "FAIL: $name: pan did not exit cleanly" >&2; show; exit 1
    fi
    echo "PASS: $name"
}

# A broken variant: NAME DEFS CCDEFS PANARGS PATTERN: at least one error, and pan's
# output matches PATTERN (the property that was meant to catch it).
expect_fail() {
    local pattern=$5
    run "$1" "$2" "$3" "$4"
    local name=$1
    if grep -qE 'errors: 0$' "$T/out" || ! grep -qE 'errors: [1-9]' "$T/out"; then
        echo "FAIL: $name: the broken variant passed: the check is vacuous" >&2; show; exit 1
    fi
    if ! grep -qE "$pattern" "$T/out"; then
        echo "FAIL: $name: the broken variant failed, but not with /$pattern/" >&2; show; exit 1
    fi
    echo "PASS: $name fails as it must: $(grep -m 1 -E "$pattern" "$T/out")"
}

SAFE_CC="-DNOCLAIM -DCOLLAPSE"
S1_ASSERT='assertion violated \(sum<=cap'
# spin 6.5 reports a violated safety claim as an assertion of the negated formula.
S3_CLAIM='assertion violated +!\( !\(.*crev<q\['
case $MODE in
s1)
    D="-DCHECK_S1 -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=2 -DEXPIRIES=0"
    expect_pass s1 "$D" "$SAFE_CC" "-w26"
    expect_fail s1-bug-no-cap-compare "$D -DBUG_NO_CAP_COMPARE" "$SAFE_CC" "-w26" "$S1_ASSERT"
    expect_fail s1-bug-fast-no-compare "$D -DBUG_FAST_NO_COMPARE" "$SAFE_CC" "-w26" "$S1_ASSERT"
    ;;
s1-lease)
    D="-DCHECK_S1 -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1 -DEXPIRIES=1"
    expect_pass s1-lease "$D" "$SAFE_CC" "-w26"
    expect_fail s1-lease-bug-no-cap-compare "$D -DBUG_NO_CAP_COMPARE" "$SAFE_CC" "-w26" "$S1_ASSERT"
    ;;
s2)
    D="-DMULTI -DCHECK_S2 -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1 -DEXPIRIES=0"
    expect_pass s2 "$D" "$SAFE_CC" "-w26"
    expect_fail s2-bug-token-create "$D -DBUG_TOKEN_CREATE" "$SAFE_CC" "-w26" \
        'assertion violated \(token>last_token\)'
    ;;
s3)
    D="-DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1 -DEXPIRIES=1"
    expect_pass s3 "$D" "-DCOLLAPSE" "-w26 -N s3"
    expect_fail s3-bug-barge "$D -DBUG_BARGE" "-DCOLLAPSE" "-w26 -N s3" "$S3_CLAIM"
    ;;
fence)
    D="-DCHECK_FENCE -DNACQ=2 -DNACQ_OTHERS=1 -DMAXW=1 -DCAP0=2 -DCHANGES=0 -DEXPIRIES=1"
    expect_pass fence "$D" "$SAFE_CC" "-w26"
    expect_fail fence-bug-no-fence "$D -DBUG_NO_FENCE" "$SAFE_CC" "-w26" \
        'assertion violated \(lease_alive\[work_c\]'
    expect_fail fence-bug-fence-by-holder "$D -DBUG_FENCE_BY_HOLDER" "$SAFE_CC" "-w26" \
        'assertion violated \(lease_alive\[work_c\]'
    ;;
l1)
    D="-DLIVENESS -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1"
    expect_pass l1 "$D" "-DNFAIR=3 -DCOLLAPSE" "-a -f -w26 -N l1"
    # The same with the capacity raised (2 to 3) while requests wait.
    expect_pass l1-raise "$D -DCAP0=2 -DRAISE_FIRST" "-DNFAIR=3 -DCOLLAPSE" "-a -f -w26 -N l1"
    expect_fail l1-bug-lost-wakeup "$D -DBUG_LOST_WAKEUP" "-DNFAIR=3 -DCOLLAPSE" \
        "-a -f -w26 -N l1" 'acceptance cycle'
    ;;
multi)
    D="-DMULTI -DCHECK_S1 -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1 -DEXPIRIES=0"
    expect_pass multi-s1 "$D" "$SAFE_CC" "-w26"
    expect_fail multi-s1-bug-no-cap-compare "$D -DBUG_NO_CAP_COMPARE" "$SAFE_CC" "-w26" \
        "$S1_ASSERT"
    expect_fail multi-s1-bug-first-part-only "$D -DBUG_FIRST_PART_ONLY" "$SAFE_CC" "-w26" \
        "$S1_ASSERT"
    D="-DMULTI -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=1 -DEXPIRIES=0"
    expect_pass multi-s3 "$D" "-DCOLLAPSE" "-w26 -N s3"
    expect_fail multi-s3-bug-barge "$D -DBUG_BARGE" "-DCOLLAPSE" "-w26 -N s3" "$S3_CLAIM"
    D="-DMULTI -DLIVENESS -DNACQ=1 -DNACQ_OTHERS=1 -DCHANGES=0"
    expect_pass multi-l1 "$D" "-DNFAIR=3 -DCOLLAPSE" "-a -f -w26 -N l1"
    expect_fail multi-l1-bug-lost-wakeup "$D -DBUG_LOST_WAKEUP" "-DNFAIR=3 -DCOLLAPSE" \
        "-a -f -w26 -N l1" 'acceptance cycle'
    ;;
*)
    echo "run_spin.sh: unknown mode '$MODE'" >&2
    exit 2
    ;;
esac
exit 0
