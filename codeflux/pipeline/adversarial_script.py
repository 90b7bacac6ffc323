"""The fixed programs stage 31 adversarial runs in the task's box: :data:`ADVERSARIAL_SCRIPT` and :data:`ENTRY_SCRIPT`.

:data:`ADVERSARIAL_SCRIPT` is run as ``<interpreter> -c ADVERSARIAL_SCRIPT <job sha256>`` in a scratch copy of the
final tree; it reads the job codeflux wrote to ``$TMPDIR/codeflux-checks/adversarial-job.json`` — and refuses one
whose SHA-256 is not the argv's (so each job is its own request, and a file left in ``$TMPDIR`` is never run):
``seed``, ``timeout_s`` (per case), ``huge_bytes``, ``canary_name`` and ``canary`` (a made-up secret), ``cases`` and
``targets`` — each with a ``key``, an ``argv`` and ``file_argument`` (the index of an argument naming an existing
file, or null).

**The cases**, every target under each: ``no-stdin`` (file descriptor 0 closed), ``empty`` (stdin at its end at
once), ``random-bytes`` (4 KiB from ``random.Random(seed)``), ``invalid-utf8`` (byte sequences no UTF-8 decoder
accepts), ``nul`` (NUL bytes inside and between lines), ``huge-line`` (one line of ``huge_bytes`` bytes, 10 MiB by
default) and ``missing-file`` (stdin empty; the file argument — or, without one, an appended argument — names a
file that does not exist). stdin is a file in ``$TMPDIR``, never a pipe, so a program that does not read it cannot
block the writer.

**Each run**: the target's argv, started in a new session with the box's environment plus ``canary_name=canary``,
its output written to files in ``$TMPDIR`` (never a pipe); a run still alive after ``timeout_s`` is a **hang** — its
whole process group is killed. Then both outputs are scanned whole (in chunks, a chunk's end carried into the next)
for the canary and for ``Traceback (most recent call last):``; the exit status, the seconds, the output sizes and
the last lines of each are kept (bounded). A program that cannot be started is reported as such.

**Report**: ``$TMPDIR/codeflux-checks/adversarial.json``, rewritten after each target; output of a process that ran
repository code, so codeflux reads it bounded and as untrusted data.

:data:`ENTRY_SCRIPT` starts a console entry point or a package's ``__main__`` the way an installed script would:
``<interpreter> -c ENTRY_SCRIPT call MODULE ATTRIBUTE NAME [ARGS…]`` imports ``MODULE``, follows ``ATTRIBUTE``
and exits with what the function returns (``sys.argv[0]`` is ``NAME``); ``module PACKAGE NAME [ARGS…]`` runs the
package as ``python -m`` does. The scratch copy's root (and its ``src`` folder, when the package lives there) is
put first on ``sys.path``, as an installed package would be found.
"""

from __future__ import annotations

from typing import Final

from codeflux.pipeline.coverage_map import CHECKS_FOLDER

__all__ = ["ADVERSARIAL_JOB", "ADVERSARIAL_REPORT", "ADVERSARIAL_SCRIPT", "CASES", "ENTRY_SCRIPT"]

ADVERSARIAL_JOB: Final = f"{CHECKS_FOLDER}/adversarial-job.json"
ADVERSARIAL_REPORT: Final = f"{CHECKS_FOLDER}/adversarial.json"
CASES: Final = ("no-stdin", "empty", "random-bytes", "invalid-utf8", "nul", "huge-line", "missing-file")

ADVERSARIAL_SCRIPT: Final = (
    "import hashlib, json, os, random, signal, subprocess, sys, time\n"
    "checks = os.path.join(os.environ['TMPDIR'], '" + CHECKS_FOLDER + "')\n"
    "with open(os.path.join(checks, 'adversarial-job.json'), 'rb') as handle:\n"
    "    text = handle.read()\n"
    "if hashlib.sha256(text).hexdigest() != sys.argv[1]:\n"
    "    sys.exit('codeflux-adversarial: the job is not the one this command names')\n"
    "job = json.loads(text)\n"
    "inputs = os.path.join(checks, 'adversarial-inputs')\n"
    "os.makedirs(inputs, exist_ok=True)\n"
    "generator = random.Random(job['seed'])\n"
    "contents = {\n"
    "    'no-stdin': b'',\n"
    "    'empty': b'',\n"
    "    'random-bytes': generator.randbytes(4096),\n"
    "    'invalid-utf8': (b'\\xff\\xfe\\xfd\\n\\xc3\\x28\\xa0\\xa1\\n\\xe2\\x28\\xa1\\xf0\\x28\\x8c\\xbc\\n'\n"
    "                     b'\\xed\\xa0\\x80\\n') * 8,\n"
    "    'nul': b'\\x00\\nname\\x00value\\n\\x00\\x00\\x00\\n',\n"
    "    'huge-line': b'A' * job['huge_bytes'] + b'\\n',\n"
    "    'missing-file': b'',\n"
    "}\n"
    "for name, content in contents.items():\n"
    "    with open(os.path.join(inputs, name), 'wb') as handle:\n"
    "        handle.write(content)\n"
    "environment = dict(os.environ)\n"
    "environment[job['canary_name']] = job['canary']\n"
    "canary = job['canary'].encode()\n"
    "marker = b'Traceback (most recent call last):'\n"
    "keep = 40\n"
    "def scan(path):\n"
    "    found_canary = found_traceback = False\n"
    "    carry, size = b'', 0\n"
    "    with open(path, 'rb') as handle:\n"
    "        while True:\n"
    "            chunk = handle.read(1 << 20)\n"
    "            if not chunk:\n"
    "                break\n"
    "            size += len(chunk)\n"
    "            window = carry + chunk\n"
    "            found_canary = found_canary or canary in window\n"
    "            found_traceback = found_traceback or marker in window\n"
    "            carry = window[-max(len(canary), len(marker)):]\n"
    "        handle.seek(max(0, size - 4096))\n"
    "        tail = handle.read().decode('utf-8', 'replace').splitlines()[-8:]\n"
    "    return found_canary, found_traceback, size, [line[:300] for line in tail]\n"
    "def killed(process):\n"
    "    try:\n"
    "        os.killpg(process.pid, signal.SIGKILL)\n"
    "    except OSError:\n"
    "        pass\n"
    "    process.wait()\n"
    "def run(target, case, number):\n"
    "    argv = list(target['argv'])\n"
    "    if case == 'missing-file':\n"
    "        missing = os.path.join(os.getcwd(), 'codeflux-missing-%d' % job['seed'], 'input.txt')\n"
    "        index = target.get('file_argument')\n"
    "        if isinstance(index, int) and 0 < index < len(argv):\n"
    "            argv[index] = missing\n"
    "        else:\n"
    "            argv.append(missing)\n"
    "    out_path = os.path.join(checks, 'adversarial-%d.out' % number)\n"
    "    err_path = os.path.join(checks, 'adversarial-%d.err' % number)\n"
    "    close_stdin = (lambda: os.close(0)) if case == 'no-stdin' else None\n"
    "    result = {'case': case}\n"
    "    with open(os.path.join(inputs, case), 'rb') as stdin, open(out_path, 'wb') as out, \\\n"
    "            open(err_path, 'wb') as err:\n"
    "        started = time.monotonic()\n"
    "        try:\n"
    "            process = subprocess.Popen(argv, stdin=stdin, stdout=out, stderr=err, env=environment,\n"
    "                                       start_new_session=True, preexec_fn=close_stdin)\n"
    "        except OSError as error:\n"
    "            result['not_started'] = (type(error).__name__ + ': ' + str(error))[:300]\n"
    "            return result\n"
    "        try:\n"
    "            result['exit'] = process.wait(timeout=job['timeout_s'])\n"
    "            result['hung'] = False\n"
    "        except subprocess.TimeoutExpired:\n"
    "            killed(process)\n"
    "            result['exit'] = None\n"
    "            result['hung'] = True\n"
    "        result['seconds'] = round(time.monotonic() - started, 3)\n"
    "    for stream, path in (('stdout', out_path), ('stderr', err_path)):\n"
    "        leaked, traced, size, tail = scan(path)\n"
    "        result[stream] = {'bytes': size, 'canary': leaked, 'traceback': traced, 'tail': tail}\n"
    "        os.unlink(path)\n"
    "    return result\n"
    "report = {'python': sys.version.split()[0], 'targets': [], 'done': False}\n"
    "def save():\n"
    "    with open(os.path.join(checks, 'adversarial.json.part'), 'w') as handle:\n"
    "        json.dump(report, handle)\n"
    "    os.replace(os.path.join(checks, 'adversarial.json.part'), os.path.join(checks, 'adversarial.json'))\n"
    "number = 0\n"
    "for target in job['targets']:\n"
    "    entry = {'key': target['key'], 'cases': []}\n"
    "    report['targets'].append(entry)\n"
    "    for case in job['cases']:\n"
    "        number += 1\n"
    "        entry['cases'].append(run(target, case, number))\n"
    "        save()\n"
    "report['done'] = True\n"
    "save()\n"
    "print('codeflux-adversarial: %d target(s)' % len(report['targets']))\n"
)
"""The hostile-input runner (see the module docstring)."""

ENTRY_SCRIPT: Final = (
    "import importlib, os, runpy, sys\n"
    "mode, rest = sys.argv[1], sys.argv[2:]\n"
    "root = os.getcwd()\n"
    "source = os.path.join(root, 'src')\n"
    "if os.path.isdir(source) and not os.path.exists(os.path.join(source, '__init__.py')):\n"
    "    sys.path.insert(0, source)\n"
    "sys.path.insert(0, root)\n"
    "if mode == 'call':\n"
    "    module, attribute, name = rest[:3]\n"
    "    sys.argv = [name, *rest[3:]]\n"
    "    target = importlib.import_module(module)\n"
    "    for part in attribute.split('.'):\n"
    "        target = getattr(target, part)\n"
    "    sys.exit(target())\n"
    "package, name = rest[:2]\n"
    "sys.argv = [name, *rest[2:]]\n"
    "runpy.run_module(package, run_name='__main__', alter_sys=True)\n"
)
"""How an entry point or a package's ``__main__`` is started (see the module docstring)."""
