"""depthlab: measure how deep terminal-agent tasks really are.

>>> import depthlab as dl
>>> dl.CAPS
(1, 2, 3, 5, 10, 20, 40, 80)

The public API is listed in ``__all__``; names are imported on first use so that
``import depthlab`` stays fast and the runner's Docker client or the notebook
machinery are only loaded by those who use them.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from depthlab._version import __version__
from depthlab.schema import CAPS

# public name -> module that defines it
_EXPORTS: dict[str, str] = {
    "load_trials": "depthlab.io",
    "read_trials": "depthlab.io",
    "load_tasks": "depthlab.io",
    "read_tasks": "depthlab.io",
    "load_task_steps": "depthlab.io",
    "load_steps": "depthlab.io",
    "TaskLoad": "depthlab.io",
    "Rejected": "depthlab.io",
    "TrialLoad": "depthlab.io",
    "LoadError": "depthlab.io",
    "load_dataset": "depthlab.datasets",
    "load_datasets": "depthlab.datasets",
    "list_datasets": "depthlab.datasets",
    "Audit": "depthlab.datasets",
    "estimate_depth": "depthlab.measures",
    "second_model_effect": "depthlab.measures",
    "turn_counts": "depthlab.measures",
    "pass_rates": "depthlab.measures",
    "audit_table": "depthlab.measures",
    "plan_missing": "depthlab.measures",
    "depth_proxy": "depthlab.measures",
    "turn_dependencies": "depthlab.measures",
    "proxy_correlations": "depthlab.measures",
    "rung_agreement": "depthlab.measures",
    "audit_data": "depthlab.auditdata",
    "AuditData": "depthlab.auditdata",
}
_SUBMODULES: tuple[str, ...] = (
    "catalog",
    "datasets",
    "schema",
    "stats",
    "simulate",
    "plots",
    "paper",
    "widgets",
    "runner",
    "io",
    "measures",
    "findings",
    "auditdata",
    "engines",
    "export",
)

# a literal list, so that linters and IDEs see the public API (tests check it matches the tables above)
__all__ = [
    "CAPS",
    "Audit",
    "AuditData",
    "LoadError",
    "Rejected",
    "TaskLoad",
    "TrialLoad",
    "__version__",
    "audit_data",
    "audit_table",
    "auditdata",
    "catalog",
    "datasets",
    "depth_proxy",
    "engines",
    "estimate_depth",
    "export",
    "findings",
    "io",
    "list_datasets",
    "load_dataset",
    "load_datasets",
    "load_steps",
    "load_task_steps",
    "load_tasks",
    "load_trials",
    "measures",
    "paper",
    "pass_rates",
    "plan_missing",
    "plots",
    "proxy_correlations",
    "read_tasks",
    "read_trials",
    "rung_agreement",
    "runner",
    "schema",
    "second_model_effect",
    "simulate",
    "stats",
    "turn_counts",
    "turn_dependencies",
    "widgets",
]

if TYPE_CHECKING:  # pragma: no cover
    from depthlab import (
        auditdata,
        catalog,
        datasets,
        engines,
        export,
        findings,
        io,
        measures,
        paper,
        plots,
        runner,
        schema,
        simulate,
        stats,
        widgets,
    )
    from depthlab.auditdata import AuditData, audit_data
    from depthlab.datasets import Audit, list_datasets, load_dataset, load_datasets
    from depthlab.io import (
        LoadError,
        Rejected,
        TaskLoad,
        TrialLoad,
        load_steps,
        load_task_steps,
        load_tasks,
        load_trials,
        read_tasks,
        read_trials,
    )
    from depthlab.measures import (
        audit_table,
        depth_proxy,
        estimate_depth,
        pass_rates,
        plan_missing,
        proxy_correlations,
        rung_agreement,
        second_model_effect,
        turn_counts,
        turn_dependencies,
    )


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f"depthlab.{name}")
    else:
        raise AttributeError(f"module 'depthlab' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
