"""Command-line adapters: parse, validate, call the product, print, map errors to exit codes.

One module per command (``main`` builds the argparse tree). A command that reads or changes tasks, budgets
or prices declares ``channel_needs(args)``; ``main`` then opens its :mod:`~codeflux.cli.channel` — the running
coordinator's socket, else the method table in this process — and the command prints the replies through
the one printer per view in :mod:`~codeflux.cli.views`. ``task start|resume`` without a coordinator, ``run``
and the maintenance commands work in their own process (docs/using.md, "One call path"). Nothing imports
this package. May import: every other codeflux package, but from ``codeflux.store`` only ``database``,
``location`` and ``opening`` (maintenance goes through :mod:`codeflux.coordinator.maintenance`).
"""
