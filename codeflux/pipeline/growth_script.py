"""The fixed program stage 16 runs in the task's box to time atoms: :data:`GROWTH_SCRIPT`.

It is run as ``<interpreter> -c GROWTH_SCRIPT <job>`` where ``<job>`` is one JSON document codeflux built
(:mod:`codeflux.pipeline.growth`): ``sizes`` (three whole numbers), ``repetitions`` (best of k), ``budget_s``
(per atom), ``min_measure_s`` (how long one measurement lasts at least) and ``atoms``, each with ``module``,
``local`` (the name inside the module), ``call`` (``function``, ``instance``, ``static`` or ``class``) and
``params``: per parameter its name, how it is passed (``positional`` or ``keyword``) and its value — one of

* ``{"size": true}`` — the size itself (a parameter named like a size);
* ``{"gen": "str"|"bytes"|"list"|"tuple"|"set"|"frozenset"|"dict", "item": K, "value": V}`` — a container of
  ``size`` elements from the deterministic generators below (``item``/``value``: ``int``, ``float``, ``str``
  or ``bytes`` element kinds);
* ``{"literal": J}`` — a JSON value (``int``, ``float``, ``bool``, ``None``, a short ``str``).

Generators (deterministic, no randomness): element ``i`` of a size-``n`` input is the int ``(i * 7919) % 1000003``
(spread, repeating only past a million), the float of that over 7, the str ``"s"`` + that int in decimal, or
its bytes; a ``str`` of size ``n`` is ``n`` letters ``chr(97 + (i * 7) % 26)``, ``bytes`` the ``n`` bytes
``(i * 31) % 256``; a ``dict`` maps element ``i`` (as key kind) to element ``i`` (as value kind).

For each atom and each size, ascending: the atom is called on freshly built arguments (building is not timed)
again and again until the timed calls add up to ``min_measure_s``; that mean is one measurement, and the best of
``repetitions`` measurements is the size's time (``time.perf_counter``). A per-atom timer
(``signal.setitimer``) stops an atom that runs past its budget, and a watchdog thread ends the whole process
(after printing what it has) when the sum of the budgets plus a grace has passed — a C extension that holds
the interpreter lock is ended by the command's own timeout instead.

The script's last line is ``codeflux-growth <json>``: per atom either ``{"sizes": […], "seconds": […],
"calls": […]}`` or ``{"problem": "…"}`` (with the sizes and seconds measured before the budget ran out, if
any). It is output of a process running repository code: codeflux reads it as
untrusted data (bounded, validated, the fit computed on its side).
"""

from __future__ import annotations

from typing import Final

__all__ = ["GROWTH_MARKER", "GROWTH_SCRIPT"]

GROWTH_MARKER: Final = "codeflux-growth "

TARGET_FUNCTION: Final = (
    "def target(atom):\n"
    "    try:\n"
    "        module = importlib.import_module(atom['module'])\n"
    "    except BaseException as error:\n"
    "        raise Unusable('importing ' + atom['module'] + ' raised ' + type(error).__name__)\n"
    "    parts = atom['local'].split('.')\n"
    "    owner = module\n"
    "    for part in parts[:-1]:\n"
    "        owner = getattr(owner, part, None)\n"
    "    if owner is None or not hasattr(owner, parts[-1]):\n"
    "        raise Unusable(atom['local'] + ' is not reachable by name from its module')\n"
    "    if atom['call'] == 'function':\n"
    "        return getattr(owner, parts[-1])\n"
    "    raw = inspect.getattr_static(owner, parts[-1])\n"
    "    if isinstance(raw, (staticmethod, classmethod)):\n"
    "        return getattr(owner, parts[-1])\n"
    "    if isinstance(raw, property):\n"
    "        raise Unusable('a property: not called with arguments')\n"
    "    try:\n"
    "        instance = owner()\n"
    "    except Exception as error:\n"
    "        raise Unusable('the class ' + parts[-2] + ' cannot be constructed with no arguments ('\n"
    "                          + type(error).__name__ + ')')\n"
    "    return getattr(instance, parts[-1])\n"
)
"""Script text shared by the box scripts that call an atom by name (growth timing, fuzzing): ``target(atom)`` imports
the atom's module and returns the callable — a function, a static or class method, or a method of an instance built
with no arguments — or raises ``Unusable`` (which the script defines) saying why not."""


GROWTH_SCRIPT: Final = (
    "import importlib, inspect, json, os, signal, sys, threading, time\n"
    "job = json.loads(sys.argv[1])\n"
    "sys.path.insert(0, os.getcwd())\n"
    "if os.path.isdir('src') and not os.path.exists(os.path.join('src', '__init__.py')):\n"
    "    sys.path.insert(0, os.path.abspath('src'))\n"
    "results = {}\n"
    "lock = threading.Lock()\n"
    "def report():\n"
    "    with lock:\n"
    "        sys.stdout.write('\\n" + GROWTH_MARKER + "' + json.dumps(results) + '\\n')\n"
    "        sys.stdout.flush()\n"
    "def watchdog():\n"
    "    for atom in job['atoms']:\n"
    "        results.setdefault(atom['key'], {'problem': 'not measured: the whole timing run ran out of time'})\n"
    "    report()\n"
    "    os._exit(0)\n"
    "timer = threading.Timer(job['budget_s'] * len(job['atoms']) + 5.0, watchdog)\n"
    "timer.daemon = True\n"
    "timer.start()\n"
    "class OverBudget(BaseException):\n"
    "    pass\n"
    "class Unusable(Exception):\n"
    "    pass\n"
    "def over(signum, frame):\n"
    "    raise OverBudget()\n"
    "signal.signal(signal.SIGALRM, over)\n"
    "def element(kind, i):\n"
    "    v = (i * 7919) % 1000003\n"
    "    if kind == 'float':\n"
    "        return v / 7.0\n"
    "    if kind == 'str':\n"
    "        return 's' + str(v)\n"
    "    if kind == 'bytes':\n"
    "        return ('s' + str(v)).encode()\n"
    "    return v\n"
    "def value(spec, n):\n"
    "    if 'size' in spec:\n"
    "        return n\n"
    "    if 'literal' in spec:\n"
    "        return spec['literal']\n"
    "    gen = spec['gen']\n"
    "    if gen == 'str':\n"
    "        return ''.join(chr(97 + (i * 7) % 26) for i in range(n))\n"
    "    if gen == 'bytes':\n"
    "        return bytes((i * 31) % 256 for i in range(n))\n"
    "    if gen == 'dict':\n"
    "        return {element(spec.get('item', 'int'), i): element(spec.get('value', 'int'), i) for i in range(n)}\n"
    "    items = [element(spec.get('item', 'int'), i) for i in range(n)]\n"
    "    return {'list': list, 'tuple': tuple, 'set': set, 'frozenset': frozenset}[gen](items)\n"
    + TARGET_FUNCTION +
    "def arguments(atom, n):\n"
    "    args, kwargs = [], {}\n"
    "    for param in atom['params']:\n"
    "        built = value(param['value'], n)\n"
    "        if param['pass'] == 'positional':\n"
    "            args.append(built)\n"
    "        else:\n"
    "            kwargs[param['name']] = built\n"
    "    return args, kwargs\n"
    "def measure(function, atom, n, deadline):\n"
    "    best, calls = None, 0\n"
    "    for _ in range(job['repetitions']):\n"
    "        spent, count = 0.0, 0\n"
    "        while spent < job['min_measure_s']:\n"
    "            if time.perf_counter() > deadline:\n"
    "                raise OverBudget()\n"
    "            args, kwargs = arguments(atom, n)\n"
    "            start = time.perf_counter()\n"
    "            function(*args, **kwargs)\n"
    "            spent += time.perf_counter() - start\n"
    "            count += 1\n"
    "        calls += count\n"
    "        mean = spent / count\n"
    "        best = mean if best is None or mean < best else best\n"
    "    return best, calls\n"
    "for atom in job['atoms']:\n"
    "    key = atom['key']\n"
    "    n = job['sizes'][0]\n"
    "    deadline = time.perf_counter() + job['budget_s']\n"
    "    signal.setitimer(signal.ITIMER_REAL, job['budget_s'] + 0.5)\n"
    "    outcome = {'sizes': [], 'seconds': [], 'calls': []}\n"
    "    try:\n"
    "        function = target(atom)\n"
    "        if inspect.iscoroutinefunction(function):\n"
    "            raise Unusable('a coroutine function: calling it does not run it')\n"
    "        for n in job['sizes']:\n"
    "            seconds, calls = measure(function, atom, n, deadline)\n"
    "            outcome['sizes'].append(n)\n"
    "            outcome['seconds'].append(seconds)\n"
    "            outcome['calls'].append(calls)\n"
    "    except OverBudget:\n"
    "        outcome = {'problem': 'not measured: the time budget (' + format(job['budget_s'], 'g')\n"
    "                   + ' s) ran out at size ' + str(n), 'sizes': outcome['sizes'], 'seconds': outcome['seconds']}\n"
    "    except Unusable as error:\n"
    "        outcome = {'problem': 'skipped: ' + str(error)[:200]}\n"
    "    except BaseException as error:\n"
    "        outcome = {'problem': 'not measured: raised ' + type(error).__name__ + ' at size ' + str(n)}\n"
    "    finally:\n"
    "        signal.setitimer(signal.ITIMER_REAL, 0)\n"
    "    with lock:\n"
    "        results[key] = outcome\n"
    "timer.cancel()\n"
    "report()\n"
)
