"""The ``tcocalc`` command line (docs/cli.md). The console script and ``python -m tcocalc`` run
:func:`tcocalc.cli.main.main`.

Its files, one per subcommand or shared concern:

- ``main.py``: ``main`` (parse, dispatch, turn errors into one line and an exit status) and ``build_parser``;
- ``common.py``: the exit statuses (``EXIT_CODES``), ``UsageError``, reading a SCENARIO argument (a file, a
  shipped name or ``-``), output folders and text tables;
- ``run.py``: ``tcocalc run`` (evaluate, ``--solve``, ``--simulate``; the text report);
- ``outputs.py``: ``run``'s ``--csv``, ``--xlsx`` and ``--json`` writers;
- ``size.py``: ``tcocalc size``;
- ``validate.py``: ``tcocalc validate``;
- ``catalogs.py``: ``tcocalc hardware``, ``models``, ``scenarios`` and ``app``;
- ``calibrate.py``: ``tcocalc calibrate``.
"""
