#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# check_deb.sh - the `deb` suite of scripts/check.sh: build the Debian packages from a
# clean copy of the tree, lint them, install them, build and run programs against the
# installed packages, and purge them again (docs/packaging.md).
#
#   scripts/check_deb.sh
#
# 1. Copies the tree (git's tracked and untracked-but-not-ignored files, or everything but
#    build/ outside a git checkout) to $BUILD_ROOT/deb/src/band-VERSION.
# 2. dpkg-buildpackage -us -uc -b there (log: $BUILD_ROOT/deb/build.log). When the tree
#    has no BAND_BUILD_DOCS option yet, with the nodoc build profile: no libband-doc and
#    no man pages, and this says so.
# 3. lintian --fail-on error,warning on the .changes.
# 4. dpkg -i the packages (as root, or through password-less sudo; otherwise it says it
#    skipped steps 4-6 and exits 0 after the build and lintian passed). It refuses to run
#    when any of them is installed already, since step 6 removes them.
# 5. Builds tests/install/consumer*.c through pkg-config and tests/install/cmake-consumer
#    through find_package(band CONFIG) (components uv, fd and redis) against /usr, runs them all, checks that they load
#    the installed libraries, and with the docs part that `man -w` finds the pages of
#    band_sem_acquire, band_uv_create and band_fd_queue_create and the HTML reference is
#    there.
# 6. dpkg --purge the packages (also on failure or interrupt), then checks they are gone.
# JOBS sets the build's parallel jobs; BUILD_ROOT, BAND_GENERATOR: see lib.sh.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
cd "$BAND_ROOT"

die()
{
    echo "check_deb: $*" >&2
    exit 1
}

for cmd in dpkg-buildpackage dpkg-deb dpkg-architecture lintian dh; do
    command -v "$cmd" >/dev/null 2>&1 || die "'$cmd' is missing (make deps)"
done
[[ -f debian/control ]] || die "debian/control does not exist"

work=$(realpath -m "$BUILD_ROOT/deb")
version=$(dpkg-parsechangelog -S Version | sed 's/-[^-]*$//')
[[ -n "$version" ]] || die "cannot read the version from debian/changelog"
src=$work/src/band-$version
rm -rf "$work"
mkdir -p "$src"

echo "== check_deb: copying the tree to $src"
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    # Tracked files as they are in the work tree, plus new files not ignored; leftovers
    # of an in-place package build (obj-*/, debian/tmp ...) are ignored or skipped.
    git ls-files -z --cached --others --exclude-standard |
        grep -zv '^obj-' |
        while IFS= read -r -d '' f; do [[ -e $f || -L $f ]] && printf '%s\0' "$f"; done |
        tar --null -T - -cf - | tar -xf - -C "$src"
else
    tar --exclude=./build --exclude='./obj-*' -cf - . | tar -xf - -C "$src"
fi

# The docs part needs the tree's BAND_BUILD_DOCS option (Doxygen -> HTML and man pages).
docs=1
if ! grep -rqs --include=CMakeLists.txt --include='*.cmake' 'BAND_BUILD_DOCS' \
    "$src/CMakeLists.txt" "$src/cmake" "$src/docs"; then
    docs=0
fi
profiles=()
build_opts="parallel=$JOBS"
if ((docs)); then
    echo "== check_deb: with the docs part (libband-doc, man pages in libband-dev)"
else
    echo "== check_deb: the tree has no BAND_BUILD_DOCS option: building with the nodoc" \
        "profile, so libband-doc and the man pages are SKIPPED"
    profiles=(-Pnodoc)
    build_opts+=" nodoc"
fi

echo "== check_deb: dpkg-buildpackage -us -uc -b ${profiles[*]} (log: $work/build.log)"
t0=$SECONDS
if ! (cd "$src" && DEB_BUILD_OPTIONS="$build_opts" \
    dpkg-buildpackage -us -uc -b "${profiles[@]}") >"$work/build.log" 2>&1; then
    tail -n 60 "$work/build.log" >&2
    die "dpkg-buildpackage failed (whole log: $work/build.log)"
fi
grep '^check-sonames:' "$work/build.log" || true
echo "built in $((SECONDS - t0))s:"
changes=$(ls "$work"/src/*.changes)
debs=()
pkgs=()
for d in "$work"/src/*.deb; do
    p=$(dpkg-deb -f "$d" Package)
    printf '  %-28s %s\n' "$p" "$(dpkg-deb -c "$d" | grep -vc '/$') files"
    case $p in *-dbgsym) continue ;; esac
    debs+=("$d")
    pkgs+=("$p")
done
((${#debs[@]} >= 4)) || die "expected at least 4 packages, built ${#debs[@]}"

echo "== check_deb: lintian --fail-on error,warning $(basename "$changes")"
rc=0
lintian --fail-on error,warning --display-info "$changes" >"$work/lintian.log" 2>&1 || rc=$?
grep -v '^running with root privileges' "$work/lintian.log" || true
((rc == 0)) || die "lintian found errors or warnings (above; exit $rc)"
echo "lintian: no errors, no warnings"

sudo=()
if [[ "$(id -u)" != 0 ]]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
        sudo=(sudo -n)
    else
        echo "== check_deb: not root and no password-less sudo: SKIPPED installing the" \
            "packages and the consumers (built and linted only)"
        exit 0
    fi
fi

for p in "${pkgs[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    if [[ -n "$st" && "$st" != not-installed && "$st" != config-files ]]; then
        die "$p is installed already ($st); this check would remove it, so it stops" \
            "here (an earlier run that was killed? then: dpkg --purge ${pkgs[*]})"
    fi
done

purge()
{
    echo "== check_deb: dpkg --purge ${pkgs[*]}"
    "${sudo[@]}" dpkg --purge "${pkgs[@]}" >"$work/purge.log" 2>&1 || cat "$work/purge.log" >&2
}
trap purge EXIT
trap 'exit 130' INT TERM

echo "== check_deb: dpkg -i"
"${sudo[@]}" dpkg -i "${debs[@]}" >"$work/install.log" 2>&1 || {
    cat "$work/install.log" >&2
    die "dpkg -i failed"
}
dpkg-query -W -f='  ${Package} ${Version} ${db:Status-Status}\n' "${pkgs[@]}"

here=$src/tests/install
out=$work/consumers
mkdir -p "$out"
cc=${CC:-cc}
pkgconfig=$(command -v pkg-config || command -v pkgconf) || die "pkg-config is missing"
multiarch=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
libdir=/usr/lib/$multiarch

echo "== check_deb: pkg-config consumers against the installed packages"
pc_libdir=$("$pkgconfig" --variable=libdir band)
[[ "$(realpath -m "$pc_libdir")" == "$libdir" ]] ||
    die "pkg-config band: libdir is $pc_libdir, not $libdir"
echo "pkg-config band: $("$pkgconfig" --modversion band), libdir $pc_libdir," \
    "cflags '$("$pkgconfig" --cflags band)', libs '$("$pkgconfig" --libs band)'"
for pc in band band-uv band-fd band-redis; do
    case $pc in
    band) c=consumer.c ;;
    band-uv) c=consumer_uv.c ;;
    band-fd) c=consumer_fd.c ;;
    band-redis) c=consumer_redis.c ;;
    esac
    exe=$out/${c%.c}
    # shellcheck disable=SC2046 # word splitting of the flags is intended
    "$cc" -std=c11 -Wall -Wextra -Wpedantic -Werror -o "$exe" "$here/$c" \
        $("$pkgconfig" --cflags --libs "$pc")
    "$exe"
    lib=lib$pc.so
    where=$(ldd "$exe" | awk -v l="$lib." 'index($1, l) == 1 { print $3 }')
    # realpath: with merged /usr, ld.so may name /lib/<triplet> for /usr/lib/<triplet>.
    [[ -n "$where" && "$(realpath "$where")" == "$libdir/"* ]] || die "$exe loads $lib from '$where', not from $libdir"
    echo "$pc: $(basename "$exe") ok, $lib from $where"
done

echo "== check_deb: find_package(band CONFIG) consumer against the installed packages"
"${CMAKE:-cmake}" -S "$here/cmake-consumer" -B "$out/cmake" -G "$BAND_GENERATOR" \
    -DCMAKE_C_COMPILER="$cc" -DCMAKE_BUILD_TYPE=Release \
    -DBAND_CONSUMER_UV=1 -DBAND_CONSUMER_FD=1 -DBAND_CONSUMER_REDIS=1 >"$out/cmake-configure.log" 2>&1 || {
    cat "$out/cmake-configure.log" >&2
    die "the CMake consumer does not configure"
}
found=$(sed -n 's/^-- found band //p' "$out/cmake-configure.log")
echo "found band $found"
[[ "$found" == *" in $libdir/cmake/band" ]] || die "find_package found band elsewhere: $found"
"${CMAKE:-cmake}" --build "$out/cmake" >"$out/cmake-build.log" 2>&1 || {
    cat "$out/cmake-build.log" >&2
    die "the CMake consumer does not build"
}
for exe in consumer consumer_static consumer_uv consumer_uv_static consumer_fd consumer_fd_static \
    consumer_redis consumer_redis_static; do
    "$out/cmake/$exe"
done
echo "cmake consumers: shared and static, core, uv, fd and redis: ok"

if ((docs)); then
    echo "== check_deb: documentation"
    command -v man >/dev/null 2>&1 || die "man is missing (make deps: man-db)"
    # One function of each library.
    for f in band_sem_acquire band_uv_create band_fd_queue_create; do
        page=$(man -w "$f") || die "man -w $f finds no page"
        echo "man -w $f: $page"
    done
    [[ -f /usr/share/doc/libband-doc/html/index.html ]] ||
        die "/usr/share/doc/libband-doc/html/index.html is missing"
    echo "HTML reference: /usr/share/doc/libband-doc/html/index.html"
fi

trap - EXIT
purge
for p in "${pkgs[@]}"; do
    st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
    [[ -z "$st" || "$st" == not-installed ]] || die "$p is still there after the purge ($st)"
done
[[ ! -e /usr/include/band ]] || die "/usr/include/band is still there after the purge"
echo "check_deb: ok (built, linted, installed, consumed, purged)"
