# SPDX-License-Identifier: MIT
# band - developer entry points (GNU make). Every target does its own set-up on a fresh
# Debian 12 machine: `deps` installs what is missing, then CMake does the rest.
#
#   make deps      install missing Debian packages (scripts/deps.sh)
#   make           release build in build/release
#   make demo      release build, then band-pipe with no arguments (tools/pipe: a generated
#                  raster set served by a private nginx, fetched, reprojected and written
#                  under per-resource budgets; log and plot in build/release/demo/pipe.*),
#                  then build/release/examples/band_demo, which writes what
#                  it measured to build/release/demo/*.tsv, draw its plots there with gnuplot
#                  (scripts/demo_plot.sh: in-flight, overload, tenants; PNG and SVG), then
#                  the download example (a local nginx, libcurl on libuv, one band semaphore)
#   make check     lint + gcc + clang + ASan/UBSan + fuzz + Debian packages + TSan, each
#                  with ctest (CI runs this)
#   make check-SUITE   one suite: check-lint check-plain check-clang check-asan check-fuzz
#                  check-deb check-tsan
#   make bench     release build, then run build/release/bench/band_bench [BENCH_ARGS=...],
#                  its figures to build/release/bench/results.tsv and, with gnuplot, plots
#                  to build/release/bench/plots/ (scripts/bench_plot.sh; with the peers
#                  too once bench-peers has run); then, when redis-server is installed,
#                  bench/redis/run.sh (libband-redis beside a bare EVALSHA and a Redis
#                  semaphore, on a private server; figures in build/release/bench/redis.tsv);
#                  then the etcd section (bench/etcd/run.sh: libband-etcd beside bare
#                  gateway requests and etcd's lock service on a private 3-member cluster;
#                  skipped with a message without etcd) [BENCH_ETCD_ARGS="--rounds 3"]
#   make bench-etcd    release build, then the etcd section alone
#   make bench-peers   release build, then the peer suite (PEERS_DIR, default
#                  ../shared/peers-bench beside this checkout) from a writable copy with
#                  band's harness in the same rounds (scripts/bench_peers.sh) [PEERS_ONLY=...]
#   make bench-pipe    release build, then band-pipe beside the stage-limits text's asyncio
#                  pipeline, GNU parallel running curl + gdalwarp, and gdalwarp -multi, on
#                  the same generated tiles and rate-limited nginx (scripts/bench_pipe.sh,
#                  bench/pipe/README.md; not a test): medians and ratios, every run in
#                  build/release/bench/pipe.tsv [BENCH_PIPE_ARGS="--tiles N --ulimit 64"]
#   make install   build the libraries alone in BUILD_ROOT/install (Release; no tests, bench,
#                  examples or fuzz; no `deps`: a C compiler and CMake are enough), then
#                  cmake --install into PREFIX (default /usr/local; DESTDIR is honoured).
#                  libband-uv is built when pkg-config finds libuv, libband-fd on Linux;
#                  BAND_BUILD_UV / BAND_BUILD_FD = AUTO (default), ON (required) or OFF
#   make uninstall remove every file the last `make install` installed (its
#                  install_manifest.txt) and the directories it created, once empty
#   make docs      the API reference and man pages (Doxygen) in build/release/docs/html and
#                  build/release/docs/man/man3 (docs/api.md, "API reference")
#   make format    clang-format -i every C file
#   make lint      clang-format check and clang-tidy
#   make clean     remove build/
#
# Knobs: JOBS=2 (compile jobs), CTEST_JOBS=2, BAND_GENERATOR (default: Ninja if installed,
# else Unix Makefiles), KEEP_GOING=1 (check: run every suite even after a failure),
# BAND_FUZZ_SECONDS=30, BAND_SKIP_DEPS=1 (do not check packages), PEERS_DIR, PEERS_ONLY,
# BENCH_PIPE_ARGS.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := all

JOBS ?= 2
CTEST_JOBS ?= 2
PREFIX ?= /usr/local
BAND_BUILD_UV ?= AUTO
BAND_BUILD_FD ?= AUTO
BENCH_ARGS ?=
BENCH_PIPE_ARGS ?=
PEERS_DIR ?= ../shared/peers-bench
BUILD_ROOT ?= build
export JOBS CTEST_JOBS BUILD_ROOT

RELEASE_DIR := $(BUILD_ROOT)/release
RELEASE_ARGS := -DCMAKE_BUILD_TYPE=Release -DBAND_BUILD_TESTS=OFF -DBAND_BUILD_BENCH=ON \
	-DBAND_BUILD_EXAMPLES=ON -DBAND_BUILD_FUZZ=OFF -DBAND_SANITIZE= -DBAND_WERROR=OFF \
	-DCMAKE_INSTALL_PREFIX=$(PREFIX)

# Runs a function of scripts/lib.sh with its defaults (generator detection etc.).
LIB := source scripts/lib.sh &&

CHECK_SUITES := lint plain clang asan fuzz deb tsan

.PHONY: all deps release demo check $(addprefix check-,$(CHECK_SUITES)) bench bench-etcd bench-peers bench-pipe install \
	uninstall format lint clean help

all: release

help:
	@sed -n '1,/^$$/p' Makefile | sed 's/^# \{0,1\}//'

deps:
	@bash scripts/deps.sh

release: deps
	@$(LIB) band_configure $(RELEASE_DIR) $(RELEASE_ARGS)
	@$(LIB) band_build $(RELEASE_DIR)

DEMO_DIR := $(RELEASE_DIR)/demo

demo: release
	@if [ ! -x $(RELEASE_DIR)/tools/pipe/band-pipe ]; then \
	    echo "demo: $(RELEASE_DIR)/tools/pipe/band-pipe was not built (needs libband-uv," \
	         "libcurl and GDAL: make deps)" >&2; exit 1; fi
	@mkdir -p $(DEMO_DIR)
	@# The generated set has broken and missing tiles on purpose: exit 1 says they failed.
	$(RELEASE_DIR)/tools/pipe/band-pipe --log $(DEMO_DIR)/pipe.jsonl --plot $(DEMO_DIR)/pipe.svg \
	    || { rc=$$?; [ $$rc -eq 1 ] || exit $$rc; \
	         echo "demo: band-pipe exit 1: the broken and missing tiles failed, as planned"; }
	@echo
	@if [ ! -x $(RELEASE_DIR)/examples/band_demo ]; then \
	    echo "demo: $(RELEASE_DIR)/examples/band_demo was not built (examples/CMakeLists.txt" \
	         "must define target band_demo)" >&2; exit 1; fi
	$(RELEASE_DIR)/examples/band_demo --data $(DEMO_DIR)
	@if command -v gnuplot >/dev/null 2>&1; then \
	    echo; bash scripts/demo_plot.sh $(DEMO_DIR); \
	    echo "demo: plots (PNG and SVG) and the data they show are in $(DEMO_DIR)/"; \
	else \
	    echo "demo: gnuplot is not installed (make deps installs gnuplot-nox): no plots;" \
	         "the data is in $(DEMO_DIR)/"; \
	fi
	@if [ -x $(RELEASE_DIR)/examples/download/band_download ]; then \
	    echo; $(RELEASE_DIR)/examples/download/band_download; \
	else echo "demo: $(RELEASE_DIR)/examples/download/band_download was not built" \
	    "(needs libband-uv, libcurl, libuv: make deps)" >&2; exit 1; fi

check: deps
	@bash scripts/check.sh

$(addprefix check-,$(CHECK_SUITES)): check-%: deps
	@bash scripts/check.sh $*

BENCH_DIR := $(RELEASE_DIR)/bench

bench: release
	@if [ ! -x $(BENCH_DIR)/band_bench ]; then \
	    echo "bench: $(BENCH_DIR)/band_bench does not exist (bench/CMakeLists.txt" \
	         "must define target band_bench)" >&2; exit 1; fi
	@echo "$(BENCH_DIR)/band_bench --tsv $(BENCH_DIR)/results.tsv $(BENCH_ARGS)"
	@$(BENCH_DIR)/band_bench --tsv $(BENCH_DIR)/results.tsv $(BENCH_ARGS)
	@if command -v gnuplot >/dev/null 2>&1; then \
	    peers=; [ -s $(BENCH_DIR)/peers.tsv ] && peers=$(BENCH_DIR)/peers.tsv; \
	    bash scripts/bench_plot.sh $(BENCH_DIR)/results.tsv $(BENCH_DIR)/plots $$peers; \
	else \
	    echo "bench: gnuplot is not installed (make deps installs gnuplot-nox): no plots;" \
	         "figures in $(BENCH_DIR)/results.tsv"; \
	fi
	@if command -v redis-server >/dev/null 2>&1; then \
	    echo; BUILD_DIR="$(RELEASE_DIR)" bash bench/redis/run.sh; \
	else \
	    echo "bench: redis-server is not installed (make deps): the Redis section is skipped"; \
	fi
	@echo
	@BUILD_DIR="$(RELEASE_DIR)" bash bench/etcd/run.sh $(BENCH_ETCD_ARGS)

bench-etcd: release
	@BUILD_DIR="$(RELEASE_DIR)" bash bench/etcd/run.sh $(BENCH_ETCD_ARGS)

bench-peers: release
	@PEERS_DIR="$(PEERS_DIR)" BUILD_DIR="$(RELEASE_DIR)" bash scripts/bench_peers.sh

bench-pipe: release
	@BUILD_DIR="$(RELEASE_DIR)" bash scripts/bench_pipe.sh $(BENCH_PIPE_ARGS)

# make install needs no `deps`: only the libraries are built, in a tree of their own.
INSTALL_DIR := $(BUILD_ROOT)/install
INSTALL_ARGS := -DCMAKE_BUILD_TYPE=Release -DBAND_BUILD_TESTS=OFF -DBAND_BUILD_BENCH=OFF \
	-DBAND_BUILD_EXAMPLES=OFF -DBAND_BUILD_TOOLS=OFF -DBAND_BUILD_FUZZ=OFF -DBAND_SANITIZE= -DBAND_WERROR=OFF \
	-DBAND_BUILD_UV=$(BAND_BUILD_UV) -DBAND_BUILD_FD=$(BAND_BUILD_FD) \
	"-DCMAKE_INSTALL_PREFIX=$(abspath $(PREFIX))"

install:
	@$(LIB) band_configure $(INSTALL_DIR) $(INSTALL_ARGS)
	@$(LIB) band_build $(INSTALL_DIR)
	DESTDIR="$(if $(DESTDIR),$(abspath $(DESTDIR)))" cmake --install $(INSTALL_DIR)

uninstall:
	cmake -DBAND_BUILD_DIR="$(abspath $(INSTALL_DIR))" -P cmake/BandUninstall.cmake

.PHONY: docs
docs: deps
	@$(LIB) band_configure $(RELEASE_DIR) $(RELEASE_ARGS) -DBAND_BUILD_DOCS=ON
	@$(LIB) band_build $(RELEASE_DIR) docs

format: deps
	@bash scripts/lint.sh format

lint: deps
	@bash scripts/lint.sh all

clean:
	rm -rf $(BUILD_ROOT)
