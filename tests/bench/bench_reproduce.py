"""Wall time of a default `depthlab reproduce` (target: under 90 s on a 2-core machine).

Prints, in one process:

* cold: a fresh output folder and a fresh user cache, so the demo data is simulated, loaded and every
  notebook executed;
* warm: the same folder again (demo data and loaded tables reused), notebooks run two at a time;
* baseline: warm again with one notebook at a time, and the ratio of the two warm runs.

Run: ``.venv/bin/python tests/bench/bench_reproduce.py [--scale X] [--out DIR]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

from depthlab.auditdata import DEMO_SCALE
from depthlab.reproduce import reproduce

TARGET_SECONDS = 90.0


def _timed(**kwargs: object) -> tuple[float, object]:
    started = time.perf_counter()
    result = reproduce(progress=False, **kwargs)
    return time.perf_counter() - started, result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=DEMO_SCALE)
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: a temporary one)")
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="bench-reproduce-"))
    if out.exists():
        shutil.rmtree(out)
    # a fresh user cache: the demo is built once per generative-model version there, shared by every --out
    os.environ["DEPTHLAB_CACHE_DIR"] = str(out / "user-cache")
    print(f"cores: {os.cpu_count()}, load average: {os.getloadavg()[0]:.1f}, scale {args.scale}, out {out}")

    cold, result = _timed(out=out, scale=args.scale)
    per_notebook = ", ".join(f"{name} {seconds:.1f}s" for name, seconds in result.seconds.items())
    print(f"cold default reproduce: {cold:.1f} s ({len(result.figures)} figures; {per_notebook})")
    warm, _ = _timed(out=out, scale=args.scale)
    print(f"warm reproduce (demo data and tables cached), 2 notebooks at a time: {warm:.1f} s")
    sequential, _ = _timed(out=out, scale=args.scale, jobs=1)
    print(
        f"baseline, warm, 1 notebook at a time: {sequential:.1f} s; speed-up of 2 at a time: {sequential / warm:.2f}x"
    )
    verdict = "meets" if cold < TARGET_SECONDS else "misses"
    print(f"target {TARGET_SECONDS:.0f} s for the cold default run: {verdict} ({cold / TARGET_SECONDS:.2f} of target)")
    if args.out is None:
        shutil.rmtree(out, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
