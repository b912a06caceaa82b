"""Defaults written once for every layer that reads them: the bootstrap's resamples, the
permutation test's permutations and their seed, the environment variable holding a model
endpoint's API key, and the bounds of a trial's container that both engines share (the pid limit,
the disk bound when a task states none).

Two sets of defaults, on purpose, and neither can move to the other without changing numbers:

- A statistic called on its own (:mod:`depthlab.stats`' correlations, quadrants, hierarchical
  bootstrap and permutation test, :func:`depthlab.measures.proxy_correlations`): :data:`N_BOOT` =
  10,000 resamples, the order of :func:`scipy.stats.bootstrap`'s 9,999, so one interval's Monte
  Carlo error is small, and :data:`N_PERM` = 10,000 permutations (scipy.stats.permutation_test's
  9,999; the Monte Carlo sd of a p-value of 0.05 is then 0.002). Its seed,
  :data:`SEED`, is None (fresh draws each call, numpy's and scipy's convention) where the function
  is a general statistic, and :data:`AUDIT_SEED` where it is one of the audit's own measures.
- The audit (:mod:`depthlab.findings`, the notebooks' ``n_boot``/``seed`` parameters,
  ``depthlab reproduce``, :func:`depthlab.measures.censored_depth`): :data:`AUDIT_N_BOOT` = 2,000
  resamples, :data:`AUDIT_N_PERM` = 2,000 permutations (a p-value of 0.05 to a Monte Carlo sd of
  0.005) and :data:`AUDIT_SEED` = 0. A notebook computes dozens of intervals, so fewer resamples
  each; a fixed seed makes its numbers repeat run to run, and the golden results
  (``tests/golden``) were computed with these.

Examples
--------
>>> from depthlab import _defaults
>>> _defaults.N_BOOT, _defaults.N_PERM, _defaults.SEED, _defaults.AUDIT_N_BOOT, _defaults.AUDIT_N_PERM
(10000, 10000, None, 2000, 2000)
>>> _defaults.AUDIT_SEED
0
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "AUDIT_N_BOOT",
    "AUDIT_N_PERM",
    "AUDIT_SEED",
    "DEFAULT_API_KEY_ENV",
    "DEFAULT_STORAGE_MB",
    "N_BOOT",
    "N_PERM",
    "PIDS_LIMIT",
    "SEED",
]

#: Bootstrap resamples of a statistic called on its own.
N_BOOT: Final[int] = 10_000
#: Permutations of a permutation test called on its own.
N_PERM: Final[int] = 10_000
#: Seed of a general statistic called on its own: fresh draws each call.
SEED: Final[None] = None
#: Bootstrap resamples of the audit's findings, notebooks and reproduce runs.
AUDIT_N_BOOT: Final[int] = 2000
#: Permutations of the audit's permutation p-values.
AUDIT_N_PERM: Final[int] = 2000
#: Seed of the audit's findings, notebooks, reproduce runs and own measures.
AUDIT_SEED: Final[int] = 0
#: The environment variable every verb reads a model endpoint's API key from, unless told another
#: (``--api-key-env``): Harbor's and LiteLLM's own. The key itself is never written anywhere.
DEFAULT_API_KEY_ENV: Final[str] = "OPENAI_API_KEY"
#: The pid limit of every trial's container, on both engines (the runner's ``RunSettings`` and
#: ``depthlab run --pids-limit``'s default, the Compose overlay around Harbor's trials): a fork bomb
#: stops there instead of at the host's limit. Harbor itself sets none.
PIDS_LIMIT: Final[int] = 1024
#: The disk bound (MB, 10 GiB) of a trial whose task.toml states no ``storage_mb``, on both engines
#: (the runner's containers, the disk watch around Harbor's trials). Harbor itself sets none; a
#: binary 10 GiB because that is what the simulated tasks state (``storage_mb = 10240``).
DEFAULT_STORAGE_MB: Final[int] = 10 * 1024
