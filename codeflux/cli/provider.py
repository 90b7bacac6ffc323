"""`codeflux provider set|test|delete|list`: provider keys live in the OS credential store only.

The key is read from standard input (without echo on a terminal), never from argv; SQLite keeps only
the reference ``os://codeflux-provider/<name>``. Nothing here contacts a provider.

``list`` is a call of the method table (``SettingsService.GetSettings``): through a running coordinator when
one serves the data directory, else in this process. ``set``, ``test``, ``delete`` and ``approve-endpoint`` are
not: they are the person's own acts on the OS credential store and the endpoint approvals, made at this
terminal (the key is read from its standard input), and each writes one row the coordinator reads again on
every use.
"""

from __future__ import annotations

import argparse
import getpass

from codeflux.api.v1 import product_pb2 as pb
from codeflux.cli.channel import Channel, ChannelNeeds, ChannelUse
from codeflux.cli.context import CliContext
from codeflux.cli.documents import provider_list_document
from codeflux.cli.output import print_json
from codeflux.cli.views import print_providers
from codeflux.coordinator.maintenance import forget_provider_key_reference, record_provider_key_reference
from codeflux.coordinator.spending.model_approvals import approve_model_endpoint
from codeflux.credentials import (
    MAX_KEY_LENGTH,
    Secret,
    delete_provider_key,
    load_provider_key,
    probe_credential_store,
    store_provider_key,
)
from codeflux.domain.errors import CredentialStoreUnavailableError, UsageError
from codeflux.domain.providers import ProviderName
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
        ("test", "check locally that a stored key can be read back (the provider is not contacted)"),
        ("delete", "delete a stored key (succeeds when nothing is stored)"),
    ):
        sub = actions.add_parser(action, help=text, description=text, allow_abbrev=False)
        sub.add_argument("--name", required=True, metavar="NAME", help=f"provider: {names}")
        # Captured only to refuse it: a key in argv is visible to every process and kept in shell history.
        sub.add_argument("stray", nargs="*", help=argparse.SUPPRESS)
        sub.add_argument("--data-dir", default=argparse.SUPPRESS, metavar="PATH", help="data directory")
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
    """``list`` reads what the coordinator sees (never creating a database); the others act on the credential
    store from this terminal (see the module docstring)."""
    return ChannelNeeds(use=ChannelUse.OPTIONAL) if args.action == "list" else None


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
        db = open_store(ctx.location(), create=True, migrate=True)
        try:
            url = approve_model_endpoint(db, provider=provider, base_url=args.base_url)
        finally:
            db.close()
        ctx.say(f"provider {provider.value}: endpoint {url} approved (codeflux may now send requests there)")
        return 0
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

