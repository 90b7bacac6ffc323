"""The fixed program stage 12 runs in the task's box to fuzz atoms with Hypothesis: :data:`FUZZ_SCRIPT`.

It is run as ``<interpreter> -c FUZZ_SCRIPT <overlay|-> <job>`` (the overlay — codeflux's tool overlay ``site``
folder — is appended after site-packages, so the repository's own Hypothesis wins) in a scratch copy of the final
tree. ``<job>`` is one JSON document codeflux built (:mod:`codeflux.pipeline.fuzz`): ``seed`` (Hypothesis's seed,
recorded), ``budget_s`` (per atom), ``input_deadline_s`` (per input), ``prepare_s`` (importing the atom and building
its strategies), ``max_repr`` (how much of an input is kept) and
``atoms``, each with ``key``, ``module``, ``local`` (the name inside the module), ``call`` (``function``,
``instance``, ``static`` or ``class``), ``inputs`` (the parameters fuzzed even when they have a default), ``json``
(parameters given JSON-like values) and ``allowed`` (the exception names its contract documents); with ``hostile``
(stage 31, :func:`~codeflux.pipeline.fuzz.hostile_atoms`) each ``inputs`` parameter annotated as text or bytes
(alone or in a union) draws hostile values first — empty, NUL, lone surrogates, a right-to-left override, a
byte-order mark, invalid UTF-8, format and path-traversal strings, a 1 MB value, 10,000 newlines — then any.

**Inputs.** Every parameter without a default, and every one named in ``inputs``, gets a Hypothesis strategy: a
JSON-like value (``None``, booleans, integers, floats, text, and lists and string-keyed dicts of them) for the
``json`` ones and for ``Any``/``object``; otherwise ``st.from_type`` of its resolved annotation, with paths
(``pathlib`` paths, ``os.PathLike``) as relative paths of one to three printable segments. A parameter without an
annotation (and no default) or whose annotation has no strategy makes the atom unusable (``skipped``, naming it).
Variadic parameters stay empty, other defaults are kept. A method is called on an instance made with no
arguments (static and class methods on the class).

**The run.** Per atom, ``@given`` with ``@seed(seed)``, no example database (Hypothesis's home is
``$TMPDIR/codeflux-checks/hypothesis``), no deadline of its own, every health check off, quiet, and
``max_examples`` unbounded: the run stops when the atom's budget is used (the next input is not started), when
Hypothesis has exhausted the input space, or at a failure. Each call has a per-input timer
(``signal.setitimer``): an input still running at ``input_deadline_s`` is a **hang** — its input kept. An exception
whose class (or a base of it) is named in ``allowed`` (by name or dotted name) is the contract's and passes; any
other is a **failure**: the input (``repr``, bounded), the exception and the traceback's tail are kept, and
Hypothesis shrinks it within half a budget more (past that the first failing input found is kept). A watchdog thread
ends the whole process when an atom is still being fuzzed past its budget, half a budget, the per-input deadline and
3 s — or still being imported and prepared after ``prepare_s`` — marking it as hung with the input it was on (an
input that swallows the per-input timer's exception is caught so); the atoms after it are not run. A C extension
that holds the interpreter lock is ended by the command's own timeout instead.

**Report.** ``$TMPDIR/codeflux-checks/fuzz.json``, rewritten after each atom (and by the watchdog):
``{"hypothesis": version, "running": key or null, "results": {key: {...}}}``; per atom ``outcome`` (``passed``,
``failed``, ``hang``, ``unusable``), ``inputs`` (how many were tried), ``seconds``, ``stopped`` and, for a
failure or a hang, ``input``, ``exception`` and ``traceback``. Output of a process running repository code:
codeflux reads it as untrusted data (bounded, validated).
"""

from __future__ import annotations

from typing import Final

from codeflux.pipeline.coverage_map import CHECKS_FOLDER
from codeflux.pipeline.growth_script import TARGET_FUNCTION

__all__ = ["FUZZ_REPORT", "FUZZ_SCRIPT"]

FUZZ_REPORT: Final = f"{CHECKS_FOLDER}/fuzz.json"
"""The report, relative to the task's TMPDIR."""

FUZZ_SCRIPT: Final = (
    "import importlib, inspect, json, os, pathlib, reprlib, signal, site, sys, threading, time, traceback, types\n"
    "import typing\n"
    "overlay = sys.argv[1]\n"
    "if overlay != '-' and os.path.isdir(overlay):\n"
    "    site.addsitedir(overlay)\n"
    "job = json.loads(sys.argv[2])\n"
    "sys.path.insert(0, os.getcwd())\n"
    "if os.path.isdir('src') and not os.path.exists(os.path.join('src', '__init__.py')):\n"
    "    sys.path.insert(0, os.path.abspath('src'))\n"
    "checks = os.path.join(os.environ['TMPDIR'], '" + CHECKS_FOLDER + "')\n"
    "os.makedirs(checks, exist_ok=True)\n"
    "report_path = os.path.join(checks, 'fuzz.json')\n"
    "from hypothesis.configuration import set_hypothesis_home_dir\n"
    "set_hypothesis_home_dir(os.path.join(checks, 'hypothesis'))\n"
    "import hypothesis\n"
    "from hypothesis import HealthCheck, Phase, Verbosity, given, settings, strategies as st\n"
    "results = {}\n"
    "state = {'key': None, 'input': None, 'started': None, 'limit': 0.0}\n"
    "lock = threading.Lock()\n"
    "def write_report():\n"
    "    with lock:\n"
    "        document = {'hypothesis': hypothesis.__version__, 'running': state['key'], 'results': results}\n"
    "        with open(report_path + '.part', 'w') as handle:\n"
    "            json.dump(document, handle)\n"
    "        os.replace(report_path + '.part', report_path)\n"
    "grace = job['budget_s'] * 0.5 + job['input_deadline_s'] + 3.0\n"
    "def watchdog():\n"
    "    while True:\n"
    "        time.sleep(0.2)\n"
    "        started, key = state['started'], state['key']\n"
    "        if started is None or key is None or time.monotonic() - started <= state['limit']:\n"
    "            continue\n"
    "        if key not in results:\n"
    "            results[key] = {'outcome': 'hang', 'input': state['input'], 'stopped': 'watchdog',\n"
    "                            'exception': None, 'traceback': [], 'seconds': time.monotonic() - started}\n"
    "        state['key'] = None\n"
    "        write_report()\n"
    "        os._exit(3)\n"
    "threading.Thread(target=watchdog, daemon=True).start()\n"
    "class OverDeadline(BaseException):\n"
    "    pass\n"
    "class OutOfBudget(BaseException):\n"
    "    pass\n"
    "class Unusable(Exception):\n"
    "    pass\n"
    "def over(signum, frame):\n"
    "    raise OverDeadline()\n"
    "signal.signal(signal.SIGALRM, over)\n"
    "shown = reprlib.Repr()\n"
    "shown.maxstring = shown.maxother = job['max_repr']\n"
    "shown.maxlist = shown.maxdict = shown.maxtuple = shown.maxset = 20\n"
    "shown.maxlevel = 6\n"
    "def bounded(value):\n"
    "    try:\n"
    "        text = shown.repr(value)\n"
    "    except BaseException as error:\n"
    "        text = '<repr raised ' + type(error).__name__ + '>'\n"
    "    return text[:job['max_repr']]\n"
    "segment = st.text(st.characters(blacklist_categories=('Cs', 'Cc'), blacklist_characters='/'), min_size=1,\n"
    "                  max_size=12)\n"
    "paths = st.lists(segment, min_size=1, max_size=3).map(lambda parts: pathlib.Path(*parts))\n"
    "for kind in (pathlib.Path, pathlib.PurePath, pathlib.PurePosixPath, pathlib.PosixPath, os.PathLike):\n"
    "    st.register_type_strategy(kind, paths)\n"
    "scalars = st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text()\n"
    "json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=5)\n"
    "                           | st.dictionaries(st.text(max_size=8), inner, max_size=5), max_leaves=12)\n"
    "hostile_text = st.sampled_from(['', '\\x00', 'a\\x00b', '\\ud800', '\\udfff\\ud800', '\\u202eevil', '\\ufeff',\n"
    "                                 '%s%n%x', '../' * 50, '{' * 5000, '\\r\\n' * 50, 'x' * 1_000_000,\n"
    "                                 '\\n' * 10_000]) | st.text()\n"
    "hostile_bytes = st.sampled_from([b'', b'\\x00', b'\\xff\\xfe\\xfd', b'\\xc3\\x28', b'\\xed\\xa0\\x80',\n"
    "                                 b'\\x00' * 10_000, b'A' * 1_000_000]) | st.binary()\n"
    "def hostile_for(hint):\n"
    "    union = typing.get_origin(hint) in (typing.Union, getattr(types, 'UnionType', typing.Union))\n"
    "    members = typing.get_args(hint) if union else (hint,)\n"
    "    rest = [member for member in members if member not in (str, bytes, bytearray)]\n"
    "    found = [hostile_text] if str in members else []\n"
    "    found += [hostile_bytes] if bytes in members else []\n"
    "    found += [hostile_bytes.map(bytearray)] if bytearray in members else []\n"
    "    if not found:\n"
    "        return None\n"
    "    return st.one_of(*found, *(st.from_type(member) for member in rest))\n"
    + TARGET_FUNCTION +
    "def strategies(function, atom):\n"
    "    try:\n"
    "        hints = typing.get_type_hints(function)\n"
    "    except Exception as error:\n"
    "        raise Unusable('its annotations could not be resolved (' + type(error).__name__ + ')')\n"
    "    chosen, positional = {}, []\n"
    "    for name, parameter in inspect.signature(function).parameters.items():\n"
    "        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):\n"
    "            continue\n"
    "        if parameter.default is not parameter.empty and name not in atom['inputs']:\n"
    "            continue\n"
    "        hint = hints.get(name, parameter.empty)\n"
    "        if job.get('hostile') and name in atom['inputs'] and hostile_for(hint) is not None:\n"
    "            chosen[name] = hostile_for(hint)\n"
    "        elif name in atom['json'] or hint is typing.Any or hint is object:\n"
    "            chosen[name] = json_values\n"
    "        elif hint is parameter.empty:\n"
    "            raise Unusable('parameter ' + name + ' has no annotation to build inputs from')\n"
    "        else:\n"
    "            try:\n"
    "                built = st.from_type(hint)\n"
    "                built.validate()\n"
    "            except Exception as error:\n"
    "                raise Unusable('parameter ' + name + ' (' + bounded(hint) + ') has no Hypothesis strategy ('\n"
    "                               + type(error).__name__ + ')')\n"
    "            chosen[name] = built\n"
    "        if parameter.kind is parameter.POSITIONAL_ONLY:\n"
    "            positional.append(name)\n"
    "    if not chosen:\n"
    "        raise Unusable('no parameter to fuzz')\n"
    "    return chosen, positional\n"
    "def allowed(error, names):\n"
    "    for kind in type(error).__mro__:\n"
    "        if kind.__name__ in names or kind.__module__ + '.' + kind.__qualname__ in names:\n"
    "            return True\n"
    "    return False\n"
    "def fuzz(atom):\n"
    "    function = target(atom)\n"
    "    if inspect.iscoroutinefunction(function):\n"
    "        raise Unusable('a coroutine function: calling it does not run it')\n"
    "    chosen, positional = strategies(function, atom)\n"
    "    budget, deadline = job['budget_s'], job['input_deadline_s']\n"
    "    found = {'inputs': 0, 'failure': None}\n"
    "    started = time.monotonic()\n"
    "    state['started'], state['limit'] = started, budget + grace\n"
    "    def body(**values):\n"
    "        now = time.monotonic()\n"
    "        if now - started > budget and (found['failure'] is None or now - started > budget * 1.5):\n"
    "            raise OutOfBudget()\n"
    "        found['inputs'] += 1\n"
    "        args = [values.pop(name) for name in positional]\n"
    "        state['input'] = bounded({**dict(zip(positional, args)), **values})\n"
    "        signal.setitimer(signal.ITIMER_REAL, deadline)\n"
    "        try:\n"
    "            function(*args, **values)\n"
    "        except OverDeadline:\n"
    "            raise\n"
    "        except BaseException as error:\n"
    "            if isinstance(error, Exception) and allowed(error, atom['allowed']):\n"
    "                return\n"
    "            lines = traceback.format_exception(type(error), error, error.__traceback__)\n"
    "            tail = [line.rstrip()[:300] for chunk in lines for line in chunk.splitlines()][-12:]\n"
    "            found['failure'] = {'input': state['input'], 'exception': (type(error).__module__ + '.'\n"
    "                                + type(error).__qualname__ + ': ' + str(error))[:400], 'traceback': tail}\n"
    "            raise\n"
    "        finally:\n"
    "            signal.setitimer(signal.ITIMER_REAL, 0)\n"
    "    test = settings(database=None, deadline=None, max_examples=10 ** 9, derandomize=False,\n"
    "                    suppress_health_check=list(HealthCheck), verbosity=Verbosity.quiet,\n"
    "                    phases=(Phase.generate, Phase.shrink))(given(**chosen)(body))\n"
    "    test = hypothesis.seed(job['seed'])(test)\n"
    "    stopped = 'exhausted'\n"
    "    try:\n"
    "        test()\n"
    "    except OutOfBudget:\n"
    "        stopped = 'budget'\n"
    "    except OverDeadline:\n"
    "        signal.setitimer(signal.ITIMER_REAL, 0)\n"
    "        if found['failure'] is not None:\n"
    "            return {'outcome': 'failed', 'stopped': 'a hang while shrinking', 'inputs': found['inputs'],\n"
    "                    'seconds': time.monotonic() - started, **found['failure']}\n"
    "        return {'outcome': 'hang', 'input': state['input'], 'stopped': 'input deadline', 'exception': None,\n"
    "                'traceback': [], 'inputs': found['inputs'], 'seconds': time.monotonic() - started}\n"
    "    except BaseException:\n"
    "        stopped = 'failure'\n"
    "    seconds = time.monotonic() - started\n"
    "    if found['failure'] is not None:\n"
    "        return {'outcome': 'failed', 'stopped': stopped, 'inputs': found['inputs'], 'seconds': seconds,\n"
    "                **found['failure']}\n"
    "    if stopped == 'failure':\n"
    "        return {'outcome': 'unusable', 'detail': 'Hypothesis itself stopped the run', 'inputs': found['inputs'],\n"
    "                'seconds': seconds}\n"
    "    return {'outcome': 'passed', 'stopped': stopped, 'inputs': found['inputs'], 'seconds': seconds}\n"
    "real_stdout = sys.stdout\n"
    "for atom in job['atoms']:\n"
    "    state['key'], state['input'] = atom['key'], None\n"
    "    state['started'], state['limit'] = time.monotonic(), job['prepare_s']\n"
    "    write_report()\n"
    "    sys.stdout = open(os.devnull, 'w')\n"
    "    try:\n"
    "        outcome = fuzz(atom)\n"
    "    except Unusable as error:\n"
    "        outcome = {'outcome': 'unusable', 'detail': str(error)[:300]}\n"
    "    except OverDeadline:\n"
    "        outcome = {'outcome': 'unusable', 'detail': 'preparing the atom ran past the per-input deadline'}\n"
    "    finally:\n"
    "        signal.setitimer(signal.ITIMER_REAL, 0)\n"
    "        sys.stdout.close()\n"
    "        sys.stdout = real_stdout\n"
    "    with lock:\n"
    "        state['started'] = None\n"
    "        results[atom['key']] = outcome\n"
    "state['key'] = None\n"
    "write_report()\n"
    "print('codeflux-fuzz: ' + str(len(results)) + ' atom(s)')\n"
)
