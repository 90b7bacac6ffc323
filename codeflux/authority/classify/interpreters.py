"""Interpreters and programs that run code they are given: python, node, perl, ruby, php, pwsh, deno, awk, sed.

Inline code (``python -c``, ``node -e`` …) may do anything: it needs ``process``, ``network`` and
``outside-write``, plus whatever its text hints at (secrets, deletion, installs, messages; running other
programs or generated code makes it unknowable). ``python -m pip`` is read as pip, network modules
(``http.server``, ``telnetlib``, ``poplib``, ``imaplib``, ``smtplib`` …) need ``network``, ``timeit``'s
statements are inline code, and the profilers and debuggers (``cProfile``, ``trace``, ``pdb``) are read
through to the module or script they run. A script file is repository code (``process``; ``network`` too
when an argument names a destination); a program read from stdin is unknowable.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_inner
from codeflux.authority.classify.findings import UNKNOWABLE, Findings, shown
from codeflux.authority.classify.hosts import host_of, names_a_destination, url_destinations, urls_in
from codeflux.authority.classify.options import Grammar, option_grammar, parse_options, table_words
from codeflux.domain.capabilities import Capability

_C = Capability


@dataclass(frozen=True, slots=True, kw_only=True)
class _Interpreter:
    grammar: Grammar
    inline: frozenset[str]  # options whose value (or the next argument) is program text
    module: frozenset[str] = frozenset()  # python -m
    version_flags: frozenset[str] = frozenset({"--version", "-V", "--help", "-h", "-v"})


_INLINE_BASE: Final = (_C.PROCESS, _C.NETWORK, _C.OUTSIDE_WRITE)
_INLINE_HINTS: Final[tuple[tuple[re.Pattern[str], tuple[Capability, ...], str], ...]] = (
    (re.compile(r"(?i)environ|getenv|process\.env|ENV\[|%ENV|\.ssh|\.aws|\.netrc|keyring|id_rsa|passw|secret|token"),
     (_C.CREDENTIAL,), "mentions environment variables or secrets"),
    (re.compile(r"(?i)rmtree|unlink|os\.remove|removedirs|rm\s+-|fs\.rm|truncate|File\.delete|FileUtils\.rm"),
     (_C.DESTRUCTIVE,), "deletes files"),
    (re.compile(r"(?i)\bpip\b|\bnpm\b|ensurepip|\binstall\b"), (_C.INSTALL,), "installs packages"),
    (re.compile(r"(?i)smtplib|sendmail|slack|webhook|mailto|discord|telegram"),
     (_C.EXTERNAL_COMMUNICATION,), "sends messages"),
    (re.compile(r"(?i)subprocess|os\.system|popen|\bexec|spawn|child_process|system\s*\(|`|%x|Invoke-Expression|"
                r"\biex\b|\beval\b|Process\.Start|__import__|importlib|base64|b64decode|ctypes"),
     UNKNOWABLE, "runs other programs or evaluates generated code"),
)


def classify_inline_code(program: str, code: str, out: Findings) -> None:
    out.add_all(_INLINE_BASE, f"{program} runs inline code, which may use the network and write anywhere")
    for pattern, capabilities, phrase in _INLINE_HINTS:
        if pattern.search(code):
            out.add_all(capabilities, f"{program} inline code {phrase}")


_PYTHON_MODULES: Final[Mapping[str, str]] = {
    "pip": "pip", "uv": "uv", "pipx": "pipx", "poetry": "poetry", "twine": "twine", "conda": "conda",
}  # fmt: skip


def _interpreter(spec: _Interpreter) -> Handler:
    def handle(command: Command, out: Findings) -> None:
        parsed = parse_options(command.args, spec.grammar)
        if parsed is None:
            out.unknowable(f"{command.program} has options codeflux cannot read")
            return
        codes = parsed.values(*spec.inline)
        if codes or parsed.has(*spec.inline):
            for code in codes or [""]:
                classify_inline_code(command.program, code, out)
            return
        modules = parsed.values(*spec.module)
        if modules:
            _classify_module(command, modules[0], list(parsed.operands), out)
            return
        operands = parsed.operands
        if operands and operands[0] != "-":
            _classify_script_file(command, operands[0], list(operands[1:]), out)
        elif not parsed.has(*spec.version_flags) or operands:
            out.unknowable(f"{command.program} reads its program from stdin, which codeflux cannot see")

    return handle


_NETWORK_MODULES: Final = frozenset(
    table_words("http urllib urllib2 requests httpx aiohttp ftplib smtplib smtpd aiosmtpd poplib imaplib nntplib "
                "telnetlib xmlrpc webbrowser wsgiref socketserver SimpleHTTPServer CGIHTTPServer pydoc uvicorn "
                "gunicorn hypercorn daphne")
)
_PROFILERS: Final = frozenset({"cProfile", "profile", "trace", "pdb"})  # they run a script or `-m MODULE`
_STDIN_MODULES: Final = frozenset({"code", "asyncio"})  # interactive consoles


def _classify_module(command: Command, module: str, rest: list[str], out: Findings) -> None:
    top = module.split(".", maxsplit=1)[0]
    if top in _PYTHON_MODULES:
        run_inner([_PYTHON_MODULES[top], *rest], command, out)
    elif top in _NETWORK_MODULES:
        out.network(f"{command.program} -m {module} uses the network", [None])
    elif top in {"ensurepip", "venv", "virtualenv", "build"}:
        out.add(_C.INSTALL, f"{command.program} -m {module} creates or installs into an environment")
        if top in {"ensurepip", "build", "virtualenv"}:
            out.network(f"{command.program} -m {module} may download packages", [None])
    elif module == "timeit":  # its operands (and -s setup) are Python statements
        classify_inline_code(f"{command.program} -m timeit", " ".join(rest), out)
    elif module in _PROFILERS:
        _classify_profiled(command, module, rest, out)
    elif module in _STDIN_MODULES:
        out.unknowable(f"{command.program} -m {module} reads code from stdin, which codeflux cannot see")
    elif any(names_a_destination(arg) for arg in rest):
        out.network(f"{command.program} -m {module} is given a network destination", [None])


def _classify_profiled(command: Command, module: str, rest: list[str], out: Findings) -> None:
    """``python -m cProfile|profile|trace|pdb [options] (-m MODULE | SCRIPT) ARGS``; ``pdb -c`` runs commands."""
    for index, arg in enumerate(rest):
        if arg in {"-m", "--module"} and index + 1 < len(rest):
            _classify_module(command, rest[index + 1], rest[index + 2 :], out)
            return
        if module == "pdb" and arg in {"-c", "--command"} and index + 1 < len(rest):
            classify_inline_code(f"{command.program} -m pdb", rest[index + 1], out)
    scripts = [arg for arg in rest if not arg.startswith("-")]
    if scripts:
        _classify_script_file(command, scripts[0], rest[rest.index(scripts[0]) + 1 :], out)


def _classify_script_file(command: Command, script: str, rest: list[str], out: Findings) -> None:
    out.add(_C.PROCESS, f"{command.program} runs the script {shown(script)} (repository code)")
    destinations = [arg for arg in rest if names_a_destination(arg)]
    if destinations:
        out.network(f"{command.program} {shown(script)} is given the network destination {shown(destinations[0])}",
                    [None])
    if script.rsplit("/", 1)[-1] == "setup.py" and command.program == "python":
        words = set(rest)
        if words & {"install", "develop", "easy_install", "bdist_egg"}:
            out.add(_C.INSTALL, "setup.py install changes the installed packages")
            out.network("setup.py install may download dependencies", [None])
        if words & {"upload", "register"}:
            out.add_all((_C.NETWORK, _C.EXTERNAL_COMMUNICATION), "setup.py upload publishes a package")


_PYTHON: Final = _Interpreter(
    grammar=option_grammar("bBdEhiIOPqsSuvVxR", "cmWX", long_values="--check-hash-based-pycs", stop_after="-c -m"),
    inline=frozenset({"-c"}),
    module=frozenset({"-m"}),
)
_NODE: Final = _Interpreter(
    grammar=option_grammar(short_values="eprC", long_values="--eval --print --require --import --loader "
                           "--experimental-loader --input-type --env-file --conditions --inspect-port --title "
                           "--redirect-warnings --openssl-config --icu-data-dir --disable-warning --watch-path"),
    inline=frozenset({"-e", "-p", "--eval", "--print"}),
)
_PERL: Final = _Interpreter(
    grammar=option_grammar(short_values="eEIMm", short_optional="il0CdDxlWV"),
    inline=frozenset({"-e", "-E"}),
)
_RUBY: Final = _Interpreter(
    grammar=option_grammar(short_values="eIrCEF", short_optional="0ixlW"),
    inline=frozenset({"-e"}),
)
_PHP: Final = _Interpreter(
    grammar=option_grammar(short_values="rBREcdzfSt"),
    inline=frozenset({"-r", "-B", "-R", "-E"}),
)
_SIMPLE_E: Final = _Interpreter(grammar=option_grammar(short_values="elL"), inline=frozenset({"-e", "-E"}))
_EXPECT: Final = _Interpreter(grammar=option_grammar(short_values="cf"), inline=frozenset({"-c"}))


_PWSH_VALUE_PARAMETERS: Final = ("executionpolicy", "workingdirectory", "windowstyle", "inputformat", "outputformat",
                                 "configurationname", "configurationfile", "settingsfile", "custompipename",
                                 "psconsolefile", "version", "encodedarguments")
_PWSH_VALUE_ALIASES: Final = frozenset({"ep", "wd", "w", "if", "of", "o", "v", "ea"})


def _powershell_parameter(arg: str) -> str | None:
    """What a PowerShell argument is: ``command``, ``encoded``, ``file``, ``value`` (takes the next
    argument), ``switch``, or None for a positional. Names are case-insensitive and may be shortened to
    any prefix (``-Comm``); both ``-`` and ``/`` introduce one."""
    if arg[:1] not in {"-", "/"} or len(arg) < 2:
        return None
    name = arg[1:].lower().rstrip(":")
    if name in {"c", "cwa"} or "command".startswith(name) or "commandwithargs".startswith(name):
        return "command"
    if name in {"e", "ec"} or (len(name) > 1 and "encodedcommand".startswith(name)):
        return "encoded"
    if "file".startswith(name):
        return "file"
    if name in _PWSH_VALUE_ALIASES or any(full.startswith(name) for full in _PWSH_VALUE_PARAMETERS if len(name) > 1):
        return "value"
    return "switch" if arg[0] == "-" else None


def _powershell(command: Command, out: Findings) -> None:
    """pwsh runs a bare argument as a script file; Windows PowerShell (``powershell``) as a command."""
    args, index = command.args, 0
    while index < len(args):
        kind = _powershell_parameter(args[index])
        index += 1
        if kind in {"command", "encoded"} or (kind is None and command.program == "powershell"):
            rest = args[index:] if kind is not None else args[index - 1 :]
            classify_inline_code(command.program, " ".join(rest), out)
            if kind == "encoded" or rest[:1] == ("-",):
                out.unknowable(f"{command.program} runs an encoded command or stdin codeflux cannot read")
            return
        if kind is None or kind == "file":
            files = args[index - 1 :] if kind is None else args[index:]
            if files and files[0] != "-":
                _classify_script_file(command, files[0], list(files[1:]), out)
                return
            break
        index += kind == "value"
    out.unknowable(f"{command.program} reads its commands from stdin, which codeflux cannot see")


def _deno(command: Command, out: Findings) -> None:
    sub = command.args[0] if command.args else ""
    if sub == "eval":
        classify_inline_code("deno", " ".join(command.args[1:]), out)
        return
    args = command.args[1:]
    if any(arg in {"-A", "--allow-all"} for arg in args):
        out.add_all(_INLINE_BASE, "deno runs with every permission")
    nets = [arg for arg in args if arg.startswith("--allow-net")]
    for flag in nets:
        hosts = flag.split("=", 1)[1].split(",") if "=" in flag else [""]
        out.network("deno --allow-net lets the program use the network",
                    [host_of(host, bare_names=True) if host else None for host in hosts])
    if any(arg.startswith(("--allow-run", "--allow-ffi")) for arg in args):
        out.unknowable("deno --allow-run/--allow-ffi lets the program run anything")
    if any(arg.startswith(("--allow-write", "--allow-env")) for arg in args):
        out.add_all((_C.OUTSIDE_WRITE, _C.CREDENTIAL), "deno may write files and read the environment")
    if sub in {"install", "add", "cache"} or urls_in(args):
        out.network(f"deno {sub} downloads modules", url_destinations(urls_in(args), out) or [None])


_AWK: Final = option_grammar(short_values="fvFEeil", short_optional="dDLop", long_values="--file --assign "
                             "--field-separator --exec --source --include --load")
_AWK_LOADS: Final = ("-f", "--file", "-E", "--exec", "-i", "--include", "-l", "--load")  # code from elsewhere


def _awk(command: Command, out: Findings) -> None:
    """The program text (``-e``/``--source``, else the first operand) or code loaded from files."""
    parsed = parse_options(command.args, _AWK)
    if parsed is None or parsed.has(*_AWK_LOADS):
        classify_inline_code("awk", " ".join(parsed.values("-e", "--source")) if parsed else "", out)
        return
    sources = parsed.values("-e", "--source")
    program = " ".join(sources) if sources else (parsed.operands[0] if parsed.operands else "")
    if re.search(r"system|getline|\||>|/inet", program):
        classify_inline_code("awk", program, out)


_SED_EXECUTES: Final = re.compile(r"(?:^|[;\n{}])\s*[0-9$,/!~]*\s*e(?:\s|$)|s(.).*\1.*\1[gipmIM0-9wW]*e")


def _sed(command: Command, out: Findings) -> None:
    """GNU sed's ``e`` command and ``s///e`` flag run shell commands."""
    parsed = parse_options(command.args, option_grammar(short_values="efl", short_optional="i",
                                                        long_values="--expression --file --line-length",
                                                        stop_at_operand=False))
    scripts = parsed.values("-e", "--expression") if parsed else []
    if parsed is not None and not scripts and parsed.operands:
        scripts = [parsed.operands[0]]
    if parsed is None or parsed.has("-f", "--file"):
        classify_inline_code("sed", " ".join(scripts), out)
    elif any(_SED_EXECUTES.search(script) for script in scripts):
        out.unknowable("sed's e command runs shell commands codeflux does not read")


INTERPRETER_PROGRAMS: Final[Mapping[str, Handler]] = {
    "python": _interpreter(_PYTHON), "node": _interpreter(_NODE), "perl": _interpreter(_PERL),
    "ruby": _interpreter(_RUBY), "php": _interpreter(_PHP), "lua": _interpreter(_SIMPLE_E),
    "rscript": _interpreter(_SIMPLE_E), "osascript": _interpreter(_SIMPLE_E),
    "julia": _interpreter(_SIMPLE_E), "expect": _interpreter(_EXPECT), "tclsh": _interpreter(_SIMPLE_E),
    "pwsh": _powershell, "powershell": _powershell, "deno": _deno, "awk": _awk, "sed": _sed,
}  # fmt: skip
"""Interpreters and the programs that run code they are given, by name."""
