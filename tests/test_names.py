"""Names that say one thing each (issue 25): one checker per kind, old public names as deprecated aliases."""

from __future__ import annotations

import pytest

from depthlab import _checks

# ------------------------------------------------------------------ one string checker


def test_check_text_is_check_string():
    assert _checks.check_text is _checks.check_string


@pytest.mark.parametrize("value", ["", "   ", 3, None])
def test_the_string_checker_refuses_blank_and_non_strings(value):
    with pytest.raises(ValueError, match=r"The 'dataset' parameter of f must be a non-empty string, got"):
        _checks.check_string(value, "dataset", "f")


def test_the_string_checker_takes_none_only_when_optional():
    assert _checks.check_string(None, "dataset", "f", optional=True) is None
    assert _checks.check_string(" tb2 ", "dataset", "f", optional=True) == " tb2 "
    with pytest.raises(ValueError, match="a non-empty string or None, got ''"):
        _checks.check_string("", "dataset", "f", optional=True)
    with pytest.raises(ValueError, match="must be a plain name, got 'a/b'"):
        _checks.check_string("a/b", "job", "f", expected="a plain name", valid=lambda s: "/" not in s)


# ------------------------------------------------------------------ bootstrap defaults, written once


def test_bootstrap_defaults_are_read_from_one_place():
    """No signature in the package states n_boot's, n_perm's or a seed's default as a literal: they read _defaults."""
    import re
    from pathlib import Path

    from depthlab import _defaults

    literal = re.compile(r"\b(n_boot|n_perm|seed)\s*:\s*[^=\n]+=\s*(\d[\d_]*|None)\b")
    package = Path(_defaults.__file__).parent
    # demo and simulation seeds pick a data set, not a bootstrap: they stay where they are
    allowed = {"auditdata.py", "simulate", "commands", "engines", "runner", "widgets.py", "evidence.py", "plots"}
    found = [
        f"{path.relative_to(package)}: {match.group(0)}"
        for path in package.rglob("*.py")
        if not allowed & {path.name, *path.relative_to(package).parts}
        for match in literal.finditer(path.read_text())
    ]
    assert found == []


def test_the_audit_and_the_statistics_keep_their_documented_defaults():
    import inspect

    from depthlab import _defaults, findings, measures, reproduce, stats

    assert (_defaults.N_BOOT, _defaults.SEED, _defaults.AUDIT_N_BOOT, _defaults.AUDIT_SEED) == (10_000, None, 2000, 0)
    assert (_defaults.N_PERM, _defaults.AUDIT_N_PERM) == (10_000, 2000)

    def defaults(f):
        names = ("n_boot", "n_perm", "seed")
        return {k: p.default for k, p in inspect.signature(f).parameters.items() if k in names}

    assert defaults(stats.partial_spearman) == {"n_boot": 10_000, "seed": None}
    assert defaults(stats.quadrant_cells) == {"n_boot": 10_000, "seed": None}
    assert defaults(measures.proxy_correlations) == {"n_boot": 10_000, "seed": 0}
    assert defaults(measures.censored_depth) == {"n_boot": 2000, "seed": 0}
    assert defaults(findings.quadrant_percentiles) == {"n_boot": 2000, "seed": 0}
    assert defaults(reproduce.reproduce) == {"n_boot": 2000, "seed": 0}
    # the resampling statistics are general statistics called on their own; the audit's rows pass its own
    assert defaults(stats.permutation_pvalue) == {"n_perm": 10_000, "seed": None}
    assert defaults(stats.hierarchical_bootstrap) == {"n_boot": 10_000, "seed": None}
    assert defaults(findings.pass_depth_given_work_robust) == {"n_perm": 2000, "n_boot": 2000, "seed": 0}
    assert "default 2,000 and 0" in " ".join(findings.pass_depth_given_work.__doc__.split())


# ------------------------------------------------------------------ renamed public names


def test_stats_quadrants_is_a_deprecated_alias_of_quadrant_cells():
    from depthlab import stats

    with pytest.warns(
        DeprecationWarning, match=r"depthlab\.stats\.quadrants is deprecated: use depthlab\.stats\.quadrant_cells"
    ):
        old = stats.quadrants
    assert old is stats.quadrant_cells
    with pytest.warns(DeprecationWarning, match="use depthlab.stats.quadrant_cells"):
        from depthlab.stats import quadrants  # noqa: F401 - the import form users hold
    assert "quadrants" not in stats.__all__
    with pytest.raises(AttributeError, match="no attribute 'quadrantz'"):
        stats.quadrantz  # noqa: B018


def test_no_public_name_means_two_things_across_stats_and_plots():
    """stats and measures compute from tables, plots draw: a name in both must not be two different functions."""
    from depthlab import measures, plots, stats

    shared = (set(stats.__all__) | set(measures.__all__)) & set(plots.__all__)
    assert shared == set()
