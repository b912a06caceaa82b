"""Variants A, B, C, C' of the fitted prior (docs/depth_uncertainty.md), replayed per scenario and draw: --c, --shared luck; A by default."""
import sys, time, json
sys.path.insert(0, "tests/bench")
import numpy as np
from bench_bayes_planner import SCENARIOS, replay
from bayes_truth import draw
import argparse
p = argparse.ArgumentParser()
p.add_argument("--scen", default="1")
p.add_argument("--designs", default="bayes")
p.add_argument("--seeds", default="0")
p.add_argument("--tasks", type=int, default=150)
p.add_argument("--shared", default="")
p.add_argument("--c", action="store_true")
a = p.parse_args()
import depthlab.measures.bayes as B
if a.c:
    B._WEIGHT_PER_DISTRIBUTION = True
    B._LEVEL_STEPS = 13
    B.noise_grid.cache_clear()
if a.shared:
    B._SHARED_FACTORS = (B._LUCK_FACTOR,)
    B.noise_grid.cache_clear()
names = list(SCENARIOS)
for seed in [int(s) for s in a.seeds.split(",")]:
    for i in [int(s) for s in a.scen.split(",")]:
        name = names[i]; setting = SCENARIOS[name]
        truth = draw(setting, a.tasks, np.random.default_rng(seed + i))
        for d in a.designs.split(","):
            t = time.time()
            r = replay(d, setting, truth, seed=seed + 1000 + i)
            print(json.dumps({"seed": seed, "scen": name, "design": d, **{k: round(float(v), 4) for k, v in r.items()}, "sec": round(time.time() - t, 1)}), flush=True)
