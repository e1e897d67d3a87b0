"""Catalogs: every read of data/ and hardware_specs/."""
