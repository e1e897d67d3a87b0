"""Prices and ownership cost (below the RL layer)."""
