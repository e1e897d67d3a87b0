"""The package version, in one place: ``tcocalc.__version__`` and pyproject.toml's dynamic version read it."""

__version__ = "0.1.0"
