"""codeflux: a local-first coordinator for an AI coding agent.

Importing this package does nothing but define names: no directories, no environment reads, no output.
"""

__version__ = "0.1.0"
__all__ = ["__version__"]
