"""One module per log format; ``tcocalc/logs/registry.py`` lists them in the order detection walks them."""
