"""Variant D of the fitted prior (docs/depth_uncertainty.md, "Variant D"): replays per scenario, draw and design.

Draw seed s + scenario index, runs seed s + 1000 + index (the draws variants A-C were measured on).
Designs: ``bayes`` (today's per-task prior), ``mixture`` (variant D), ``oracle`` (told the noise).
Prints one JSON line per replay.

Usage: ``nice -n 19 python tests/bench/bayes_prior_mixture.py --designs bayes,oracle --seeds 0,1,2,3,4``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).parent))

from bayes_truth import draw
from bench_bayes_planner import SCENARIOS, replay


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=",".join(str(i) for i in range(len(SCENARIOS))))
    parser.add_argument("--designs", default="bayes,mixture,oracle")
    parser.add_argument("--seeds", default="0,1,2,3,4")
    parser.add_argument("--tasks", type=int, default=150)
    args = parser.parse_args()
    names = list(SCENARIOS)
    for seed in (int(s) for s in args.seeds.split(",")):
        for index in (int(i) for i in args.scenarios.split(",")):
            name = names[index]
            setting = SCENARIOS[name]
            truth = draw(setting, args.tasks, np.random.default_rng(seed + index))
            for design in args.designs.split(","):
                start = time.time()
                result = replay(design, setting, truth, seed=seed + 1000 + index)
                row = {"seed": seed, "scenario": name, "design": design, **{k: float(v) for k, v in result.items()}}
                print(json.dumps({**row, "seconds": round(time.time() - start, 1)}), flush=True)


if __name__ == "__main__":
    main()
