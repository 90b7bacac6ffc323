"""`codeflux provider set|test|delete|list`: provider keys live in the OS credential store only.

The key is read from standard input (without echo on a terminal), never from argv; SQLite keeps only
the reference ``os://codeflux-provider/<name>``. Nothing here contacts a provider — except ``test --live``, which,
once the endpoint is approved and the person said yes (at the terminal, or ``--yes``), sends one request that costs
nothing (the models list, :mod:`codeflux.providers.probe`) with the key a run would use (its environment variable,
else the OS credential store), through the route the config file's ``[network]`` sets.

``list`` and ``approve-endpoint`` are calls of the method table (``SettingsService.GetSettings``,
``SettingsService.ApproveEndpoint``): through a running coordinator when one serves the data directory — so it
records the approval and publishes its ``endpoint-approved`` event at once — else in this process; the output is the
same either way. ``set``, ``test`` and ``delete`` are not: they are the person's own acts on the OS credential
store, made at this terminal (the key is read from its standard input), and each writes one row the coordinator
reads again on every use.
"""

from __future__ import annotations

import argparse
import getpass

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse, control
from codeflux.cli.context import CliContext
from codeflux.cli.documents import provider_list_document
from codeflux.cli.output import print_json
from codeflux.cli.views import print_providers
from codeflux.coordinator.maintenance import forget_provider_key_reference, record_provider_key_reference
from codeflux.coordinator.provider_keys import key_loader, process_keys
from codeflux.coordinator.spending.model_approvals import endpoint_approved
from codeflux.coordinator.user_config import load_user_config
from codeflux.credentials import (
    MAX_KEY_LENGTH,
    Secret,
    delete_provider_key,
    load_provider_key,
    probe_credential_store,
    store_provider_key,
)
from codeflux.domain.errors import (
    CredentialStoreUnavailableError,
    DecisionNeededError,
    EndpointApprovalRequiredError,
    UsageError,
)
from codeflux.domain.providers import ProviderName
from codeflux.providers.endpoints import DEFAULT_BASE_URLS, normalize_base_url
from codeflux.providers.network import network_policy
from codeflux.providers.probe import models_url, probe_endpoint
from codeflux.providers.transport import HttpPolicy
from codeflux.services.workspace import provider_statuses
from codeflux.store.opening import open_store

NAME = "provider"
SUMMARY = "store, test, delete or list model-provider keys (kept in the OS credential store, read from stdin)"
RECORDS_APP_LOG = True


def configure(parser: argparse.ArgumentParser) -> None:
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    names = ", ".join(p.value for p in ProviderName)
    for action, text in (
        ("set", "store or rotate a key; the key is read from standard input, never from arguments"),
        ("test", "check locally that a stored key can be read back (the provider is not contacted); --live sends "
                 "one request that costs nothing (the models list) to prove the endpoint accepts the key"),
        ("delete", "delete a stored key (succeeds when nothing is stored)"),
    ):
        sub = actions.add_parser(action, help=text, description=text, allow_abbrev=False)
        sub.add_argument("--name", required=True, metavar="NAME", help=f"provider: {names}")
        # Captured only to refuse it: a key in argv is visible to every process and kept in shell history.
        sub.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
        if action == "test":
            sub.add_argument("--live", action="store_true",
                             help="contact the endpoint once (GET its models list: no model runs, nothing is billed)")
            sub.add_argument("--base-url", default=None, metavar="URL",
                             help="with --live: the endpoint (default: the provider's; openai-compatible needs it; "
                                  "a non-default one must be approved first)")
            sub.add_argument("--no-key", action="store_true", help="with --live: send no key (a local server)")
            sub.add_argument("--yes", action="store_true",
                             help="with --live: send the request without asking (needed without a terminal)")
    endpoint_help = ("approve a non-default base URL for a provider (e.g. a local OpenAI-compatible server); "
                     "codeflux calls it only after this")
    endpoint = actions.add_parser("approve-endpoint", help=endpoint_help, description=endpoint_help,
                                  allow_abbrev=False)
    endpoint.add_argument("--name", required=True, metavar="NAME", help=f"provider: {names}")
    endpoint.add_argument("--base-url", required=True, metavar="URL",
                          help="https URL, or http on loopback only; no user, query or fragment")
    endpoint.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    listing = actions.add_parser("list", help="list providers and whether a key is stored", allow_abbrev=False)
    listing.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
    listing.add_argument("--json", action="store_true",
                         help="print one JSON document (its keys: docs/using.md, \"JSON output\")")


def _read_key(ctx: CliContext) -> Secret:
    if ctx.stdin.isatty():
        line = getpass.getpass("provider key (input hidden): ", stream=ctx.stderr)
    else:
        try:
            line = ctx.stdin.readline(MAX_KEY_LENGTH + 2)
        except UnicodeDecodeError:
            raise UsageError("the key on standard input is not valid UTF-8 text") from None
    value = line.strip()
    if not value:
        raise UsageError("no key on standard input; pipe it in, e.g. `codeflux provider set --name NAME < keyfile`")
    return Secret(value)  # length and character checks happen in the keystore, once


def _require_credential_store() -> None:
    status = probe_credential_store(timeout_s=5.0)
    if not status.usable:
        raise CredentialStoreUnavailableError(
            f"no usable OS credential store ({status.backend}): {status.reason}; {status.fix}"
        )


def channel_needs(args: argparse.Namespace) -> ChannelNeeds | None:
    """``list`` reads what the coordinator sees (never creating a database); ``approve-endpoint`` records through
    it (creating the database in process when none exists); the others act on the credential store from this
    terminal (see the module docstring)."""
    if args.action == "list":
        return ChannelNeeds(use=ChannelUse.OPTIONAL)
    if args.action == "approve-endpoint":
        return ChannelNeeds(use=ChannelUse.CREATE)
    return None


def run(args: argparse.Namespace, ctx: CliContext, channel: Channel | None) -> int:
    if args.action == "list":
        statuses = (provider_statuses(None) if channel is None else
                    channel.call("SettingsService/GetSettings", pb.GetSettingsRequest(), pb.SettingsView).providers)
        if args.json:
            print_json(ctx, provider_list_document(statuses))
        else:
            print_providers(ctx, statuses)
        return 0
    if args.action == "approve-endpoint":
        provider = ProviderName.parse(args.name)
        url = normalize_base_url(provider, args.base_url)  # what the service records; refused before any call
        if channel is None:  # CREATE always gives a channel; kept for the type checker
            raise UsageError("approve-endpoint needs the data directory")
        channel.call("SettingsService/ApproveEndpoint",
                     pb.ApproveEndpointRequest(control=control(), provider=provider.value, base_url=url),
                     pb.SettingsView)
        ctx.say(f"provider {provider.value}: endpoint {url} approved (codeflux may now send requests there)")
        return 0
    if args.action == "test" and _live(args):
        return _test_live(args, ctx, ProviderName.parse(args.name))
    if args.stray:
        raise UsageError(
            "a key given as an argument is refused (other processes and your shell history can see it); "
            "pipe it on standard input: `codeflux provider set --name NAME < keyfile`"
        )
    provider = ProviderName.parse(args.name)
    _require_credential_store()
    if args.action == "set":
        key = _read_key(ctx)
        reference = store_provider_key(provider, key)
        rotated = record_provider_key_reference(ctx.location(), provider=provider.value,
                                                credential_ref=str(reference))
        verb = "updated" if rotated else "stored"
        ctx.say(f"provider {provider.value}: credential {verb} in the OS credential store "
                "(codeflux keeps only a reference)")
    elif args.action == "test":
        load_provider_key(provider)
        ctx.say(f"provider {provider.value}: a credential is stored and readable; "
                "codeflux did not contact the provider")
    else:
        removed_key = delete_provider_key(provider)
        removed_ref = forget_provider_key_reference(ctx.location(), provider=provider.value)
        if removed_key or removed_ref:
            ctx.say(f"provider {provider.value}: credential deleted")
        else:
            ctx.say(f"provider {provider.value}: nothing was stored; nothing to delete")
    return 0



def _live(args: argparse.Namespace) -> bool:
    """``test --live`` was asked for (its options without it are refused)."""
    if (args.base_url or args.no_key or args.yes) and not args.live:
        raise UsageError("--base-url, --no-key and --yes go with --live")
    return bool(args.live) and not args.stray


def _test_live(args: argparse.Namespace, ctx: CliContext, provider: ProviderName) -> int:
    """``provider test --live`` (see the module docstring): approval, then the person's yes, then one request."""
    if provider is ProviderName.OPENAI_COMPATIBLE and not args.base_url:
        raise UsageError("--live for openai-compatible needs --base-url (the server's URL, e.g. "
                         "http://127.0.0.1:4000/v1)")
    if args.no_key and provider is not ProviderName.OPENAI_COMPATIBLE:
        raise UsageError(f"--no-key is for an openai-compatible server; {provider.value} always needs its key")
    base_url = normalize_base_url(provider, args.base_url or DEFAULT_BASE_URLS[provider])
    db = open_store(ctx.location(), create=True, migrate=True)
    try:
        if not endpoint_approved(db, provider=provider, base_url=base_url):
            raise EndpointApprovalRequiredError(provider=provider.value, base_url=base_url)
        key = None if args.no_key else key_loader(db)(provider)
    finally:
        db.close()
    given = process_keys().environment_key(provider)
    source = "no key" if key is None else ("the key from " + given.describe() if given is not None
                                           else "the key from the OS credential store")
    url = models_url(provider, base_url)
    what = f"one request with {source} to {url} (its models list: no model runs, nothing is billed)"
    if not args.yes:
        if not ctx.stdin.isatty():
            raise DecisionNeededError(f"provider test --live sends {what}; add --yes to send it")
        ctx.stderr.write(f"Send {what}? [y/N] ")
        ctx.stderr.flush()
        if ctx.stdin.readline().strip().lower() not in ("y", "yes"):
            ctx.say(f"provider {provider.value}: nothing was sent")
            return 0
    network = load_user_config(ctx.environ).network
    policy = network_policy(HttpPolicy(max_attempts=2), network, endpoint=base_url, environ=ctx.environ)
    found = probe_endpoint(provider, base_url=base_url, key=key, policy=policy, display_name=provider.value)
    listed = "" if found.models is None else f"; it lists {found.models} model(s)"
    request = "" if found.request_id is None else f" (request id {found.request_id})"
    ctx.say(f"provider {provider.value}: {url} answered{request} and accepted {source}{listed}")
    return 0
