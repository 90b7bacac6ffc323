"""Programs the table does not name: what their arguments show anyway.

An unknown program needs ``process`` (see ``commands``). Its arguments may show more:

* an argument naming a network destination — a URL with a host or ``HOST:PORT``, as
  :func:`~codeflux.authority.classify.hosts.names_a_destination` reads them — adds ``network``,
  unscoped: codeflux cannot tell where an unknown program really goes;
* an argument naming a program of the table, followed by more arguments, may be the command the
  unknown program runs (``rlwrap curl URL``, ``proxychains4 -q git fetch``, a launcher codeflux has no
  grammar for): the words from there on are read as that command, one level deeper. Every such
  position is read, so an option value naming a program (``-C git curl URL``) cannot hide a later one;
  a request whose guesses would read more than :data:`MAX_GUESSED_WORDS` words is unknowable rather
  than slow.

Programs that treat their operands as data (``echo``, ``grep``, ``which``, ``mkdir``, ``pytest`` …)
are left out: ``grep curl notes.txt`` runs no curl and ``echo https://…`` contacts nothing. Shell
builtins are never the guessed command (a program cannot exec ``eval``), nor are program names that are
everyday words (``view``, ``open``, ``at``, ``http`` …): those are far more often option values.
"""

from __future__ import annotations

from typing import Final

from codeflux.authority.classify.commands import Command, is_table_program, run_inner
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.hosts import names_a_destination
from codeflux.authority.classify.options import table_words
from codeflux.domain.capabilities import Capability

_C = Capability

MAX_GUESSED_WORDS: Final = 4096
"""Words read on a guess per request (each guess reads the rest of the argv); past this the request is
unknowable. It bounds the work: guesses inside guesses could otherwise multiply."""

_DATA_PROGRAMS: Final = frozenset(
    table_words(
        """echo printf true false test cat tac head tail less more most nl wc od xxd hexdump strings file stat
        du df ls dir vdir tree cd pushd popd pwd dirs mkdir rmdir touch cp mv ln realpath readlink basename
        dirname which whereis whatis apropos type hash help info tldr grep egrep fgrep rg ag ack diff diff3
        sdiff cmp comm uniq cut paste join tr fold fmt column expand unexpand rev shuf csplit tee
        base32 base64 basenc md5sum sha1sum sha224sum sha256sum sha384sum sha512sum b2sum cksum sum gzip
        gunzip zcat bzip2 bunzip2 bzcat xz unxz xzcat zstd unzstd lz4 jq yq xmllint iconv dos2unix unix2dos
        pgrep pidof ps date cal sleep seq yes uname id whoami groups locale getconf nproc unset read wait
        jobs shift exit return getopts ulimit umask shopt history let complete compgen unalias pytest
        py.test ruff mypy black isort flake8 pylint pyright tsc eslint prettier"""
    )
)
_NOT_GUESSED: Final = frozenset(
    table_words(
        """export declare typeset readonly local set eval trap alias source . exec builtin coproc command
        at batch ed ex view open host write wall init service security pass op screen mail kill test sem
        entr show http halt link links"""
    )
)  # shell builtins (a program cannot exec them) and program names that are everyday words: `--mode view
#    out.txt` or `-k open tests/` name no command, and reading them as one (an editor, a network client)
#    would put every capability on ordinary requests


def read_unknown_program(command: Command, out: Findings) -> None:
    """Add what the arguments of a program codeflux does not know show: destinations, inner commands."""
    if command.program in _DATA_PROGRAMS or out.guesses > MAX_GUESSED_WORDS:
        return  # past the budget the request is already unknowable
    destinations = [arg for arg in command.args if names_a_destination(arg)]
    if destinations:
        out.network(f"{command.program} is given the network destination {shown(destinations[0])}", [None])
    for index, word in enumerate(command.args[:-1]):
        if not is_table_program(word, command.programs) or word in _NOT_GUESSED:
            continue
        out.guesses += len(command.args) - index
        if out.guesses > MAX_GUESSED_WORDS:
            out.unknowable(f"too many arguments of {command.program} may be commands it runs")
            return
        out.add(_C.PROCESS, f"{command.program} may run {shown(word)}, which its arguments name")
        run_inner(command.args[index:], command, out)
