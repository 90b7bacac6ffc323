"""`codeflux start`: the coordinator with its loopback browser UI (ARCHITECTURE §11).

In order: refuse a non-loopback ``--address`` (exit 2); take the data directory's instance lock — when a
coordinator already serves the data directory, ``start`` does what ``codeflux open`` does instead (asks it
over its 0600 socket for a fresh one-time link, prints and opens it, exit 0; this run's flags are not
applied to it), and exits 3 naming the holder only when that coordinator cannot be reached; migrate the
database (with a backup) and run startup recovery — interrupted work is marked and shown, never resumed;
then serve HTTP + the WebSocket envelope on the address and gRPC on a 0600 Unix socket for the CLI; print
the URL and open the browser (``--no-browser`` skips that). The printed URL carries a one-time launch
token, redeemed once for the session cookie — the session secret itself is never printed, logged or
stored. ``codeflux open`` gets a fresh link later, over the socket.

The URL names the UI's own host, ``cf-<label>.localhost`` (one random label per data directory,
:mod:`codeflux.coordinator.browser_host`), which browsers resolve to loopback by themselves, so the session
cookie is never sent to another server on 127.0.0.1. ``--ip-host`` is the explicit fallback for a browser
that cannot open such a name: the UI is then served on the loopback address itself, and every other local
server on that address receives the session — printed as a warning on every start.

SIGINT / SIGTERM: every active run pauses between turns and gets a ``shutdown`` checkpoint, workers stop,
the WAL is checkpointed, and the command exits 0. The first signal says how many runs it waits for; a second one
cancels the commands they are running (each recorded ``cancelled``) instead of waiting for them. ``--demo``
creates the sample repository and uses the scripted provider, labelled "scripted demo — not an AI model" wherever
it appears.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ipaddress
import os
import signal
import sys
import webbrowser
from collections.abc import Callable, Mapping, Sequence
from typing import Final
from urllib.parse import urlsplit

import codeflux
from codeflux.api.v1 import product_pb2
from codeflux.cli.context import CliContext
from codeflux.cli.run import (
    SCRIPTED,
    add_provider_arguments,
    args_with_choice,
    build_gateway,
    pin_of_args,
    with_configured_provider,
    with_environment,
)
from codeflux.coordinator.browser_host import browser_host_name, is_browser_host_name, renew_browser_host_name
from codeflux.coordinator.instance import coordinator_socket_path, hold_instance_lock
from codeflux.coordinator.runs.configured import configured_thresholds
from codeflux.coordinator.spending.gateway import ModelGateway
from codeflux.coordinator.spending.provider_choice import (
    ChoiceSource,
    PinnedChoice,
    ProviderChoice,
    read_provider_choice,
)
from codeflux.coordinator.tasks.recovery import recover_interrupted, shared_running_lock
from codeflux.coordinator.user_config import load_user_config
from codeflux.domain.errors import CodefluxError, CoordinatorRunningError, UsageError
from codeflux.domain.providers import ProviderName
from codeflux.providers.endpoints import normalize_base_url
from codeflux.server.client import call_unary, unix_channel
from codeflux.server.launch import LaunchTokens
from codeflux.server.serve import LOOPBACK_HOSTS, ServingInfo, serve_coordinator, url_host
from codeflux.services.app import SCRIPTED_DEMO_LABEL, CoordinatorApp
from codeflux.services.methods import build_method_table, shutdown_runs
from codeflux.services.workspace import create_demo_repository
from codeflux.store.database import Database
from codeflux.store.location import DataLocation, ensure_data_directory
from codeflux.store.opening import open_store

NAME = "start"
SUMMARY = "run the coordinator and open its browser UI on loopback"
RECORDS_APP_LOG = True

DEFAULT_ADDRESS: Final = "127.0.0.1:47311"
# How long after handing the link to a browser ``start`` waits for a tab to open it before saying why it may not.
UNOPENED_REMINDER_S: Final = 30.0


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--address",
        default=DEFAULT_ADDRESS,
        metavar="HOST:PORT",
        help=f"loopback address to serve on (default {DEFAULT_ADDRESS}; port 0 picks a free one)",
    )
    parser.add_argument("--no-browser", action="store_true", help="print the URL but do not open a browser")
    parser.add_argument(
        "--ip-host",
        action="store_true",
        help="serve the UI on the loopback address itself instead of its own cf-….localhost name — only if your "
        "browser cannot open that name: every other server on that address then receives the session "
        "(see docs/security.md)",
    )
    parser.add_argument(
        "--new-host-name",
        action="store_true",
        help="give this data directory's UI a new random host name (links and cookies of the old one stop working)",
    )
    parser.add_argument(
        "--demo",
        action="store_true",
        help="create the sample repository and use the scripted provider (not an AI model)",
    )
    add_provider_arguments(parser)
    parser.set_defaults(provider=None)  # no flag: the choice in Settings → Providers, else scripted


def parse_loopback_address(text: str) -> tuple[str, int]:
    """``127.0.0.1:47311``, ``[::1]:8080`` or ``localhost:0`` → (host, port); anything else is refused — other
    loopback addresses (``127.0.0.2``) too, as the server would refuse them: before anything is written."""
    host, sep, port_text = text.rpartition(":")
    if not sep or not port_text.isascii() or not port_text.isdigit() or len(port_text) > 5:
        raise UsageError("--address must be HOST:PORT with a loopback host, e.g. 127.0.0.1:47311")
    port = int(port_text)
    if port > 65535:
        raise UsageError("--address: the port must be between 0 and 65535")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return "127.0.0.1", port
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise UsageError("--address: the host must be a loopback address (127.0.0.1, ::1 or localhost)") from None
    if str(address) not in LOOPBACK_HOSTS:
        raise UsageError("--address: codeflux serves only on loopback (127.0.0.1, ::1 or localhost)")
    return str(address), port


class CliModelAccess:
    """The provider ``start`` uses (see :class:`codeflux.services.app.ModelAccess`), by one precedence table: a
    ``--provider`` flag (or ``CODEFLUX_PROVIDER``, which stands for it), else the demo's scripted provider once the
    demo was created, else the choice stored in Settings → Providers (read at every gateway build), else the config
    file's ``[provider]`` (read when ``start`` began), else the built-in default, the scripted provider (not an AI
    model). A task pins the choice in force when it is created (:meth:`pin_for_new_task`); its plan drafts and runs
    use the pin (:meth:`pinned_gateway`), so a choice or flag changed afterwards applies to tasks created afterwards
    only. A task created before pins (migration 000018) uses the choice in force when each draft or run starts."""

    def __init__(self, db: Database, args: argparse.Namespace, environ: Mapping[str, str] | None = None, *,
                 command_flag_wins: bool = False) -> None:
        """``command_flag_wins``: a command that drafts a plan in its own process (``task plan|resume``) with a
        ``--provider`` flag uses the flag for that command even on a task with a pin (its explicit choice)."""
        environ = os.environ if environ is None else environ
        # CODEFLUX_PROVIDER stands for the --provider flag (same rank), and is named as itself
        self._flag_source = ChoiceSource.FLAG if args.provider is not None else ChoiceSource.ENVIRONMENT
        args = with_environment(args, environ)
        if args.provider is not None:  # its models: a flag, the environment, the file, else the built-in pair
            args = with_configured_provider(args, environ)
        self._db, self._args, self._environ = db, args, environ
        self._command_flag_wins = command_flag_wins
        # The demo switched to the scripted provider while the stored choice had this revision (a choice made
        # in Settings afterwards wins again); False: no demo in this run.
        self._demo: int | bool | None = False
        # The config file's provider (scripted when it names none); read once, refused before serving if invalid.
        self._configured = with_configured_provider(argparse.Namespace(**{**vars(args), "provider": None}),
                                                    environ)
        configured_thresholds(load_user_config(environ), environ)  # an unknown [pipeline] key: refused before serving
        if args.provider is not None:
            build_gateway(db, args, phases=("plan",))  # refuse bad provider flags before serving

    def _chosen(self) -> tuple[argparse.Namespace, ChoiceSource]:
        if self._args.provider is not None:
            return self._args, self._flag_source
        read = read_provider_choice(self._db)
        if self._demo is not False and self._demo == read.revision:
            return argparse.Namespace(**{**vars(self._args), "provider": SCRIPTED, "script": None}), ChoiceSource.DEMO
        stored = read.choice
        if stored is None and self._configured.provider != SCRIPTED:
            return self._configured, ChoiceSource.CONFIG
        if stored is None:
            return argparse.Namespace(**{**vars(self._args), "provider": SCRIPTED}), ChoiceSource.DEFAULT
        return self._args_of(stored, ChoiceSource.SETTINGS), ChoiceSource.SETTINGS

    def _args_of(self, choice: ProviderChoice, source: ChoiceSource) -> argparse.Namespace:
        return args_with_choice(self._args, choice, source)

    def pin_for_new_task(self) -> PinnedChoice:
        """The choice in force now and why: what a task created now pins (a flag given to this ``start`` wins for
        tasks created while it runs; a task created before keeps its own pin)."""
        args, source = self._chosen()
        return pin_of_args(args, source)

    def pinned_gateway(self, pin: PinnedChoice, phases: Sequence[str]) -> ModelGateway:
        if self._command_flag_wins and self._args.provider is not None:  # `task plan --provider …` in process
            return self.gateway(phases)
        return build_gateway(self._db, self._args_of(pin.choice, pin.source), phases=phases)[0]

    @property
    def source(self) -> str:
        return self._chosen()[1].value

    @property
    def scripted(self) -> bool:
        return bool(self._chosen()[0].provider == SCRIPTED)

    @property
    def label(self) -> str:
        args, source = self._chosen()
        if args.provider == SCRIPTED:
            return SCRIPTED_DEMO_LABEL
        try:
            return pin_of_args(args, source).choice.label  # as a task created now shows it
        except CodefluxError:  # a refused URL or no model: a gateway build says why; the URL is never echoed
            return f"{args.provider} ({args.cheap_model})" if args.cheap_model else str(args.provider)

    @property
    def endpoint(self) -> tuple[str, str] | None:
        """The endpoint :meth:`gateway` calls now (a ``--base-url`` flag's, ``CODEFLUX_BASE_URL``'s, the config
        file's or the stored choice's — as :func:`build_gateway` resolves it), None for the provider's default."""
        args = self._chosen()[0]
        if args.provider == SCRIPTED:
            return None
        try:
            resolved = with_configured_provider(args, self._environ)
            if not resolved.base_url:
                return None
            provider = ProviderName.parse(str(resolved.provider))
            return provider.value, normalize_base_url(provider, str(resolved.base_url))
        except CodefluxError:  # refused or made invalid while start runs: a gateway build says why
            return None

    def gateway(self, phases: Sequence[str]) -> ModelGateway:
        return build_gateway(self._db, self._chosen()[0], phases=phases)[0]

    def use_scripted_demo(self) -> None:
        if self._args.provider is not None:  # a flag: the demo replaces it for this run (as before)
            self._args.provider, self._args.script = SCRIPTED, None
        self._demo = read_provider_choice(self._db).revision


def open_url(url: str, environ: Mapping[str, str]) -> bool:
    """Hand a loopback http URL to the OS browser; anything else is never passed on. Without a graphical
    session (no DISPLAY / WAYLAND_DISPLAY on Linux) nothing is opened: a console browser would take over
    the terminal the coordinator prints to."""
    host = (urlsplit(url).hostname or "") if url.startswith("http://") else ""
    loopback = url.startswith(("http://127.0.0.1:", "http://[::1]:"))
    if not (loopback or is_browser_host_name(host)) or any(c in url for c in "@#\\ "):
        return False
    if sys.platform.startswith("linux") and not (environ.get("DISPLAY") or environ.get("WAYLAND_DISPLAY")):
        return False
    try:
        return bool(webbrowser.open(url, new=2))
    except webbrowser.Error:
        return False


def run(args: argparse.Namespace, ctx: CliContext) -> int:
    host, port = parse_loopback_address(args.address)
    location = ctx.location()
    ensure_data_directory(location)
    with contextlib.ExitStack() as stack:
        try:
            instance = stack.enter_context(hold_instance_lock(location))
        except CoordinatorRunningError as running:
            return _link_from_running(ctx, location, running, open_browser=not args.no_browser)
        db = open_store(location, create=True, migrate=True)
        try:
            found = recover_interrupted(db, location)
            for line in () if found is None else (*found.landings, *found.cleanups):
                ctx.warn(line)
            if found is None:
                ctx.warn("another codeflux process is running tasks; startup recovery was left to it")
            elif found.tasks:
                ctx.say(f"{len(found.tasks)} interrupted task(s) need recovery (shown in the UI)")
            if found is not None and found.store_damaged:
                ctx.say(f"the database lost committed data (a damaged write-ahead log): what "
                        f"{len(found.store_damaged)} open task(s) did since is unknown (shown in the UI's recovery "
                        "list)")
            # From here on this process runs tasks: no other process's startup may mark them interrupted.
            with shared_running_lock(location):
                app = CoordinatorApp(
                    db=db, location=location, models=CliModelAccess(db, args, ctx.environ), version=codeflux.__version__
                )
                ui_name = _ui_name(ctx, db, host, ip_host=args.ip_host, renew=args.new_host_name)
                if args.demo:
                    _create_demo(ctx, app)
                _serve(ctx, app, host=host, port=port, ui_name=ui_name, open_browser=not args.no_browser,
                       announce=instance.announce)
        finally:
            db.checkpoint_wal()
            db.close()
    ctx.say("codeflux stopped: active runs paused with a shutdown checkpoint; the database is checkpointed")
    return 0


def _link_from_running(ctx: CliContext, location: DataLocation, running: CoordinatorRunningError, *,
                       open_browser: bool) -> int:
    """A coordinator already serves this data directory: print (and open) a fresh link it issues, as
    ``codeflux open`` does. If it cannot be asked (still starting, or not answering), the refusal stands."""
    try:
        with unix_channel(coordinator_socket_path(location)) as channel:
            link = call_unary(channel, "/codeflux.v1.SessionService/IssueLaunchLink",
                              product_pb2.IssueLaunchLinkRequest(), product_pb2.LaunchLink, timeout=10.0)
    except CodefluxError:
        raise running from None
    ctx.say(f"codeflux is already running for this data directory ({running.holder}); it keeps its address and "
            "provider, and this run's flags are not applied. A new link into it:")
    say_launch_link(ctx, link, open_browser=open_browser)
    return 0


def say_launch_link(ctx: CliContext, link: product_pb2.LaunchLink, *, open_browser: bool) -> None:
    """Print a link the running coordinator issued and hand it to the browser (``codeflux open``, and a
    ``start`` while a coordinator already runs)."""
    window = "two minutes" if link.valid_seconds == 120 else f"{link.valid_seconds} seconds"
    ctx.say(f"open: {link.url}")
    ctx.say(f"  (that link works once, within {window}; the session secret is never printed)")
    if open_browser and not open_url(link.url, ctx.environ):
        ctx.say("  (no browser could be opened here; open the link yourself)")


def _ui_name(ctx: CliContext, db: Database, host: str, *, ip_host: bool, renew: bool) -> str:
    """The host name the UI answers to: this data directory's ``cf-<label>.localhost``, or with ``--ip-host``
    the loopback address itself (said as a warning)."""
    name = renew_browser_host_name(db) if renew else browser_host_name(db)
    if renew:
        ctx.say("the UI has a new host name: links and browser sessions of the old one no longer work")
    if not ip_host:
        return name
    ctx.warn(
        "--ip-host: the UI is served on the loopback address itself, so your browser sends this session's "
        "cookie to every other server you open on that address (for example a dev server running code the "
        "agent wrote). Use it only if your browser cannot open *.localhost names; see docs/security.md"
    )
    return url_host(host)


async def remind_if_unopened(ctx: CliContext, tokens: LaunchTokens, ui_name: str, *, delay: float) -> None:
    """The browser was handed the link: if no tab has redeemed one after ``delay`` seconds, the likeliest
    cause is a browser that cannot open ``*.localhost`` names — say so, and how to fall back."""
    await asyncio.sleep(delay)
    if tokens.page_keys_issued == 0:
        ctx.say(f"the browser has not opened the link after {delay:.0f} s. If it shows an error for {ui_name} (it "
                "cannot open *.localhost names), stop codeflux and run `codeflux start --ip-host` (less safe: "
                "see docs/security.md); otherwise open the link yourself")


def _create_demo(ctx: CliContext, app: CoordinatorApp) -> None:
    root = create_demo_repository(app)
    ctx.say(f"demo: sample repository at {root}; the provider is the {SCRIPTED_DEMO_LABEL}")


def _serve(
    ctx: CliContext, app: CoordinatorApp, *, host: str, port: int, ui_name: str, open_browser: bool,
    announce: Callable[[str], None],
) -> None:
    tokens = LaunchTokens()
    table = build_method_table(app)
    reminders: set[asyncio.Task[None]] = set()

    def ready(info: ServingInfo) -> None:
        app.port = info.port
        origin = info.url
        announce(origin)
        launch = f"{origin}/launch?token={tokens.issue()}"
        ctx.say(f"codeflux {app.version} is serving on {origin} (listening on {url_host(info.host)}:{info.port};"
                f" provider: {app.models.label})")
        if info.ui_name != url_host(info.host):
            ctx.say(f"{ui_name} is this codeflux's own name for your machine: Chromium and Firefox open it by"
                    " themselves. If your browser cannot, stop codeflux and run `codeflux start --ip-host`"
                    " (less safe: see docs/security.md).")
        ctx.say(f"open: {launch}")
        ctx.say("  (that link works once, within two minutes; the session secret is never printed)")
        if open_browser and not open_url(launch, ctx.environ):
            ctx.say("  (no browser could be opened here; open the link yourself)")
        elif open_browser and info.ui_name != url_host(info.host):
            reminder = asyncio.get_running_loop().create_task(
                remind_if_unopened(ctx, tokens, ui_name, delay=UNOPENED_REMINDER_S))
            reminders.add(reminder)
            reminder.add_done_callback(reminders.discard)
        ctx.say("stop with Ctrl-C")

    async def main() -> None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()

        def on_signal(name: str) -> None:
            if not stop.is_set():  # the first: say what stopping waits for, and how not to wait
                stop.set()
                runs = app.runs.running_commands()
                ctx.say(f"{name}: stopping — {runs} active run(s) pause between turns; a command that is running "
                        "finishes first. Press Ctrl-C again to cancel running commands (recorded as cancelled)."
                        if runs else f"{name}: stopping — no run is active.")
                return
            ctx.say(f"{name} again: cancelling running commands (each is recorded as cancelled; what it did "
                    "before it was killed is not known) …")
            app.runs.cancel_running_commands()

        for number in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(number, on_signal, signal.Signals(number).name)
        try:
            await serve_coordinator(
                app,
                table,
                host=host,
                port=port,
                tokens=tokens,
                socket_path=coordinator_socket_path(app.location),
                ready=ready,
                stop=stop,
                ui_name=ui_name,
            )
        finally:
            for reminder in tuple(reminders):
                reminder.cancel()
            ctx.say("stopping: pausing active runs between turns …")
            await asyncio.to_thread(shutdown_runs, app)

    asyncio.run(main())
