#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check.sh - everything CI checks, in order (what `make check` and .ci/run run).
#
#   scripts/check.sh [SUITE...]      default: lint plain clang asan fuzz deb tsan
#
#   lint   clang-format --dry-run -Werror on all C files; clang-tidy on src/; docs/errors.md
#          against the error table and the headers (scripts/check_errors_doc.sh)
#   plain  gcc, RelWithDebInfo, -Werror                            build/check  + ctest
#          (the only suite with the install_consumer test; like every suite's ctest it
#          runs exports_* and errors_doc: each shared library exports exactly its
#          headers' API, and docs/errors.md matches them)
#   clang  clang, RelWithDebInfo, -Werror                          build/clang  + ctest
#          (without the etcd fault tests and band-pipe's end-to-end runs, labels
#          etcd-fault and pipe-e2e)
#   asan   gcc, Debug at -O1, ASan+UBSan (BAND_SANITIZE=address)  build/asan   + ctest
#   fuzz   clang, libFuzzer + ASan+UBSan, ctest -L fuzz           build/fuzz   (skipped
#          while fuzz/CMakeLists.txt does not exist)
#   deb    the Debian packages (scripts/check_deb.sh, docs/packaging.md): dpkg-buildpackage
#          from a clean copy of the tree, lintian --fail-on error,warning, dpkg -i, the
#          tests/install consumers against /usr, dpkg --purge   build/deb (as non-root
#          without password-less sudo: build and lintian only)
#   tsan   clang, RelWithDebInfo, TSan (BAND_SANITIZE=thread)      build/tsan   + ctest
# Every suite but fuzz and deb builds tests, benches and examples, and ctest runs them all.
#
# TSan runs last on purpose: it is the most important job, and its full ctest run ends the
# log, so ctest's closing "100% tests passed, 0 tests failed out of N" is the last such
# line CI sees. Any failure stops the run with a non-zero exit (KEEP_GOING=1 runs the
# remaining suites first). JOBS, CTEST_JOBS, BAND_GENERATOR, BUILD_ROOT: see lib.sh;
# BAND_FUZZ_SECONDS sets how long each fuzz target runs (default 30).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BAND_ROOT"

ALL_SUITES=(lint plain clang asan fuzz deb tsan)

suite_lint()
{
    bash "$BAND_ROOT/scripts/lint.sh" all
}

suite_plain()
{
    local d="$PLAIN_DIR"
    band_configure "$d" "${PLAIN_ARGS[@]}"
    band_build "$d"
    band_ctest "$d"
}

suite_clang()
{
    local d="$BUILD_ROOT/clang"
    band_configure "$d" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DBAND_WERROR=ON -DBAND_BUILD_TESTS=ON -DBAND_BUILD_BENCH=ON -DBAND_BUILD_EXAMPLES=ON \
        -DBAND_BUILD_FUZZ=OFF -DBAND_SANITIZE=
    band_build "$d"
    # The multi-process etcd fault tests and band-pipe's end-to-end runs run in the gcc
    # and sanitizer suites (TSan's build is clang's too); their time goes to the servers
    # and to GDAL, so a second compiler adds nothing to them but minutes.
    band_ctest "$d" -LE 'etcd-fault|pipe-e2e'
}

suite_asan()
{
    local d="$BUILD_ROOT/asan"
    # Debug with -O1, as the sanitizers' manuals advise: assertions and band__*_check()
    # stay on, and the iteration-bound models and tests run about a third faster than at -O0.
    band_configure "$d" -DCMAKE_C_COMPILER=gcc -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DBAND_SANITIZE=address -DBAND_BUILD_TESTS=ON -DBAND_BUILD_BENCH=ON \
        -DBAND_BUILD_EXAMPLES=ON -DBAND_BUILD_FUZZ=OFF
    band_build "$d"
    band_ctest "$d"
}

suite_tsan()
{
    local d="$BUILD_ROOT/tsan"
    band_configure "$d" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DBAND_SANITIZE=thread -DBAND_BUILD_TESTS=ON -DBAND_BUILD_BENCH=ON \
        -DBAND_BUILD_EXAMPLES=ON -DBAND_BUILD_FUZZ=OFF
    band_build "$d"
    band_ctest "$d"
}

suite_fuzz()
{
    if [[ ! -f fuzz/CMakeLists.txt ]]; then
        echo "-- fuzz/CMakeLists.txt does not exist yet: skipping the fuzz suite"
        return 0
    fi
    local d="$BUILD_ROOT/fuzz"
    # Debug with -O1: assertions and band__*_check() stay on, and it still runs fast.
    band_configure "$d" -DCMAKE_C_COMPILER=clang -DCMAKE_BUILD_TYPE=Debug \
        "-DCMAKE_C_FLAGS_DEBUG=-O1 -g" -DBAND_SANITIZE=address -DBAND_BUILD_FUZZ=ON \
        -DBAND_BUILD_TESTS=OFF -DBAND_BUILD_BENCH=OFF -DBAND_BUILD_EXAMPLES=OFF \
        "-DBAND_FUZZ_SECONDS=${BAND_FUZZ_SECONDS:-30}"
    band_build "$d"
    band_ctest "$d" -L fuzz
}

suite_deb()
{
    bash "$BAND_ROOT/scripts/check_deb.sh"
}

describe()
{
    case $1 in
    lint) echo "lint: clang-format, clang-tidy and the result-code docs" ;;
    plain) echo "plain: gcc RelWithDebInfo -Werror, tests + bench + examples -> $BUILD_ROOT/check" ;;
    clang) echo "clang: clang RelWithDebInfo -Werror -> $BUILD_ROOT/clang" ;;
    asan) echo "asan: gcc Debug -O1, AddressSanitizer + UndefinedBehaviorSanitizer -> $BUILD_ROOT/asan" ;;
    fuzz) echo "fuzz: clang libFuzzer + ASan/UBSan, ctest -L fuzz -> $BUILD_ROOT/fuzz" ;;
    deb) echo "deb: Debian packages: build, lintian, install, consumers, purge -> $BUILD_ROOT/deb" ;;
    tsan) echo "tsan: clang RelWithDebInfo, ThreadSanitizer -> $BUILD_ROOT/tsan" ;;
    esac
}

suites=("$@")
((${#suites[@]})) || suites=("${ALL_SUITES[@]}")
for s in "${suites[@]}"; do
    if ! declare -F "suite_$s" >/dev/null; then
        echo "check: unknown suite '$s' (have: ${ALL_SUITES[*]})" >&2
        exit 2
    fi
done

banner "band check: ${suites[*]}  (jobs $JOBS, ctest -j $CTEST_JOBS, $BAND_GENERATOR)"
echo "gcc:   $(gcc --version | head -n 1)"
echo "clang: $(clang --version | head -n 1)"
echo "cmake: $(cmake --version | head -n 1)"
echo "cores: $(nproc)"

summary=()
failed=()
start_all=$SECONDS
i=0
for s in "${suites[@]}"; do
    i=$((i + 1))
    banner "[$i/${#suites[@]}] $(describe "$s")"
    t0=$SECONDS
    # Not `if (suite)`: errexit is ignored inside an if condition, even in a subshell.
    set +e
    ("suite_$s")
    rc=$?
    set -e
    if ((rc == 0)); then
        summary+=("$s ok $((SECONDS - t0))s")
    else
        summary+=("$s FAILED $((SECONDS - t0))s")
        failed+=("$s")
        if [[ "${KEEP_GOING:-0}" != 1 ]]; then
            break
        fi
    fi
done

banner "band check summary ($((SECONDS - start_all))s)"
printf '  %s\n' "${summary[@]}"
if ((${#failed[@]})); then
    echo "check: FAILED suites: ${failed[*]}" >&2
    exit 1
fi
echo "check: all ${#suites[@]} suites OK"
