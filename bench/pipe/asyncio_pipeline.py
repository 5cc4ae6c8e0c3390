#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""asyncio_pipeline.py - the asyncio pipeline of the stage-limits text, for the benchmark.

Fetches each URL with aiohttp, decodes and reprojects it with rasterio (to EPSG:3857 by
default) and writes a compressed GeoTIFF (--compress, with band-pipe's creation options:
tiled 256 x 256, the codec's fastest level, predictor 2), with one asyncio.Semaphore per
stage, sized as the
text sizes them: fetch 32, cpu = cores, memory = budget // per-tile working set (memory
bounded by count), write 4, and one more around the whole unit for descriptors
(descriptor budget // 2). Semaphores are taken in a fixed order and released in reverse
(the text's held() helper); cpu and memory are held together over decode + reproject.

Beyond the text: a 429 or 503 is retried after its Retry-After (at most --retries times,
the fetch slot held meanwhile); nothing else is special about throttling. A failed tile
(HTTP error, corrupt raster) is counted and the run goes on. The output is written to a
temporary name and renamed, as band-pipe does.

usage: asyncio_pipeline.py URLS OUTDIR [--crs EPSG:3857] [--resampling bilinear]
                           [--compress zstd|deflate|lzw]
                           [--memory-mb 1024] [--per-tile-mb 16] [--descriptors 400]
                           [--retries 10]
The resampling and the compression default to band-pipe's (bilinear, zstd), so both do the
same work per tile.
Prints one line: "asyncio: done D failed F throttled T seconds S". Exit 0 when every tile
was written, 1 when some failed, 2 on bad usage.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass

import aiohttp
import numpy as np
import rasterio
from rasterio.io import MemoryFile
from rasterio.warp import Resampling, calculate_default_transform, reproject


@dataclass
class Limits:
    fetch: asyncio.Semaphore
    cpu: asyncio.Semaphore
    memory: asyncio.Semaphore
    write: asyncio.Semaphore
    unit: asyncio.Semaphore  # bounds descriptors across overlapping stages

    @classmethod
    def build(cls, *, memory_budget_mb: int, per_tile_mb: int,
              descriptor_budget: int = 400) -> "Limits":
        cores = os.cpu_count() or 4
        by_memory = max(1, memory_budget_mb // max(per_tile_mb, 1))
        return cls(
            fetch=asyncio.Semaphore(32),
            cpu=asyncio.Semaphore(cores),
            memory=asyncio.Semaphore(by_memory),
            write=asyncio.Semaphore(4),
            unit=asyncio.Semaphore(max(1, descriptor_budget // 2)),
        )


@asynccontextmanager
async def held(*semaphores: asyncio.Semaphore):
    """Acquire several semaphores in a fixed order, release in reverse."""
    acquired = []
    try:
        for sem in semaphores:
            await sem.acquire()
            acquired.append(sem)
        yield
    finally:
        for sem in reversed(acquired):
            sem.release()


class Counters:
    def __init__(self) -> None:
        self.done = 0
        self.failed = 0
        self.throttled = 0


def _retry_after(response: aiohttp.ClientResponse) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", "1")))
    except ValueError:
        return 1.0


async def fetch(session: aiohttp.ClientSession, url: str, retries: int,
                counters: Counters) -> bytes:
    attempt = 0
    while True:
        async with session.get(url) as response:
            if response.status in (429, 503) and attempt < retries:
                counters.throttled += 1
                delay = _retry_after(response)
            else:
                response.raise_for_status()
                return await response.read()
        attempt += 1
        await asyncio.sleep(delay)


async def process_tile(session: aiohttp.ClientSession, url: str, dst_path: str,
                       dst_crs: str, resampling: Resampling, codec: str, limits: Limits,
                       retries: int, counters: Counters) -> str:
    async with held(limits.unit):
        async with held(limits.fetch):
            payload = await fetch(session, url, retries, counters)

        async with held(limits.cpu, limits.memory):
            array, profile = await asyncio.to_thread(_decode_and_warp, payload, dst_crs,
                                                     resampling, codec)
            del payload

        async with held(limits.write):
            await asyncio.to_thread(_write, dst_path, array, profile)

    return dst_path


def creation_options(codec: str) -> dict:
    """band-pipe's creation options for CODEC: tiled, the codec's fastest level, predictor 2."""
    opts = {"tiled": True, "blockxsize": 256, "blockysize": 256, "compress": codec,
            "predictor": 2}
    if codec == "zstd":
        opts["zstd_level"] = 1
    elif codec == "deflate":
        opts["zlevel"] = 1
    return opts


def _decode_and_warp(payload: bytes, dst_crs: str, resampling: Resampling, codec: str):
    with MemoryFile(payload) as memfile:
        with memfile.open() as src:
            transform, width, height = calculate_default_transform(
                src.crs, dst_crs, src.width, src.height, *src.bounds)
            profile = src.profile.copy()
            for key in ("blockxsize", "blockysize", "tiled", "photometric", "compress"):
                profile.pop(key, None)
            profile.update(driver="GTiff", crs=dst_crs, transform=transform, width=width,
                           height=height, **creation_options(codec))
            array = np.zeros((src.count, height, width), dtype=src.dtypes[0])
            reproject(source=rasterio.band(src, list(range(1, src.count + 1))),
                      destination=array, src_transform=src.transform, src_crs=src.crs,
                      dst_transform=transform, dst_crs=dst_crs,
                      resampling=resampling)
            return array, profile


def _write(path: str, array: np.ndarray, profile: dict) -> None:
    tmp = path + ".part"
    with rasterio.open(tmp, "w", **profile) as dst:
        dst.write(array)
    os.replace(tmp, path)


def _out_name(url: str, index: int, seen: set) -> str:
    base = url.rstrip("/").rsplit("/", 1)[-1].split("?", 1)[0] or f"tile{index}"
    stem = base.rsplit(".", 1)[0] if base.lower().endswith((".tif", ".tiff")) else base
    name = stem
    while name in seen:
        name = f"{stem}-{index}"
        index += 1
    seen.add(name)
    return name + ".tif"


async def run(urls: list, outdir: str, args: argparse.Namespace) -> Counters:
    limits = Limits.build(memory_budget_mb=args.memory_mb, per_tile_mb=args.per_tile_mb,
                          descriptor_budget=args.descriptors)
    counters = Counters()
    resampling = Resampling[args.resampling]
    seen: set = set()
    dst = [os.path.join(outdir, _out_name(u, i, seen)) for i, u in enumerate(urls)]
    async with aiohttp.ClientSession() as session:
        async def one(url: str, path: str) -> None:
            try:
                await process_tile(session, url, path, args.crs, resampling, args.compress,
                                   limits, args.retries, counters)
                counters.done += 1
            except Exception as e:  # a per-tile failure: count it, go on
                counters.failed += 1
                if args.verbose:
                    print(f"asyncio: {url}: {type(e).__name__}: {e}", file=sys.stderr)

        await asyncio.gather(*(one(u, p) for u, p in zip(urls, dst)))
    return counters


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("urls")
    ap.add_argument("outdir")
    ap.add_argument("--crs", default="EPSG:3857")
    ap.add_argument("--resampling", default="bilinear",
                    choices=[r.name for r in Resampling])
    ap.add_argument("--compress", default="zstd", choices=["zstd", "deflate", "lzw"])
    ap.add_argument("--memory-mb", type=int, default=1024)
    ap.add_argument("--per-tile-mb", type=int, default=16)
    ap.add_argument("--descriptors", type=int, default=400)
    ap.add_argument("--retries", type=int, default=10)
    ap.add_argument("--verbose", action="store_true")
    args = ap.parse_args()
    with open(args.urls) as f:
        urls = [ln.strip() for ln in f if ln.strip() and not ln.lstrip().startswith("#")]
    os.makedirs(args.outdir, exist_ok=True)
    t0 = time.monotonic()
    c = asyncio.run(run(urls, args.outdir, args))
    print(f"asyncio: done {c.done} failed {c.failed} throttled {c.throttled} "
          f"seconds {time.monotonic() - t0:.3f}")
    return 0 if c.failed == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
