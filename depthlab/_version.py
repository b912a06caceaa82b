"""The package version, written once (layer 0: every layer may read it; setup.cfg reads it too)."""

__version__ = "0.1.0"
