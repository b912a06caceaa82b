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
