"""Command-line adapters: parse, validate, call one service, map errors to exit codes.

One module per command. Nothing imports this package. May import: every other codeflux package.
"""
