"""Network programs: curl, wget, httpie, ssh, scp/sftp/rsync, openssl, plain network clients, cloud CLIs.

Each adds ``network`` once per host it can read from the argv (unscoped when it cannot), and
``external-communication`` when it sends data, ``credential`` when it is given secrets, ``destructive``
when it deletes at the far end (``rsync --delete``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Final

from codeflux.authority.classify.commands import Command, Handler, run_script
from codeflux.authority.classify.findings import Findings, shown
from codeflux.authority.classify.hosts import REMOTE_SPEC, host_of, normalize_host, url_destinations, url_host, urls_in
from codeflux.authority.classify.options import Parsed, option_grammar, parse_options, short_letters, table_words
from codeflux.authority.classify.paths import DRIVE
from codeflux.domain.capabilities import Capability

_C = Capability

_CURL: Final = option_grammar(
    short_values="AbcCdDeEFHKmoPQrtTuUwxXYyz",
    long_values="--url --data --data-raw --data-binary --data-urlencode --data-ascii --json --form "
    "--form-string --header --output --user --request --upload-file --proxy --proxy-user --cookie "
    "--cookie-jar --referer --user-agent --connect-to --resolve --config --max-time --connect-timeout "
    "--retry --cacert --cert --key --output-dir --write-out --range --oauth2-bearer --netrc-file "
    "--dump-header --continue-at --interface --unix-socket --limit-rate --max-filesize --pass "
    "--proxy-header --quote --retry-delay --retry-max-time --speed-limit --speed-time --time-cond "
    "--trace --trace-ascii --variable --aws-sigv4 --mail-from --mail-rcpt --url-query",
    stop_at_operand=False,
)
_CURL_SENDS: Final = ("-d", "--data", "--data-raw", "--data-binary", "--data-urlencode", "--data-ascii",
                      "--json", "-F", "--form", "--form-string", "-T", "--upload-file", "--mail-rcpt")
_CURL_SECRETS: Final = ("-u", "--user", "-U", "--proxy-user", "--oauth2-bearer", "-E", "--cert", "--key",
                        "--pass", "-n", "--netrc", "--netrc-file", "--netrc-optional", "--aws-sigv4")
_SENDING_METHODS: Final = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def _curl(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, _CURL)
    if parsed is None:
        out.network("curl contacts a host codeflux cannot read", [None])
        return
    reason = "curl transfers data over the network"
    hosts = _operand_destinations([*parsed.values("--url", "-x", "--proxy"), *parsed.operands], out)
    if parsed.has("-K", "--config", "--connect-to", "--resolve", "--unix-socket") or not hosts:
        hosts.append(None)
    out.network(reason, hosts)
    methods = {value.upper() for value in parsed.values("-X", "--request")}
    if parsed.has(*_CURL_SENDS) or methods & _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, "curl sends data to a remote host")
    if parsed.has(*_CURL_SECRETS):
        out.add(_C.CREDENTIAL, "curl is given credentials (user, token, certificate or netrc)")


def _operand_destinations(operands: Iterable[str], out: Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for operand in operands:
        if "://" in operand:
            hosts.extend(url_destinations([operand], out))
        else:
            hosts.append(host_of(operand, bare_names=False))
    return hosts


_WGET: Final = option_grammar(
    short_values="OoaPeUtTwQiBlARDXIY",
    long_values="--output-document --output-file --append-output --directory-prefix --user --password "
    "--http-user --http-password --post-data --post-file --body-data --body-file --method --header "
    "--input-file --execute --user-agent --tries --timeout --wait --quota --level --accept --reject "
    "--domains --load-cookies --save-cookies --certificate --private-key --ca-certificate --base "
    "--ftp-user --ftp-password --proxy-user --proxy-password",
    stop_at_operand=False,
)


def _wget(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, _WGET)
    if parsed is None:
        out.network("wget contacts a host codeflux cannot read", [None])
        return
    hosts = _operand_destinations(parsed.operands, out)
    if parsed.has("-i", "--input-file", "-e", "--execute", "-B", "--base") or not hosts:
        hosts.append(None)
    out.network("wget downloads over the network", hosts)
    if parsed.has("--post-data", "--post-file", "--body-data", "--body-file") or {
        value.upper() for value in parsed.values("--method")
    } & _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, "wget sends data to a remote host")
    if parsed.has("--user", "--password", "--http-user", "--http-password", "--ftp-password",
                  "--proxy-password", "--private-key", "--certificate"):
        out.add(_C.CREDENTIAL, "wget is given credentials")


_HTTPIE_METHODS: Final = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})


def _httpie(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, option_grammar(short_values="abAov", stop_at_operand=False))
    operands = list(parsed.operands) if parsed else []
    method = operands.pop(0).upper() if operands and operands[0].upper() in _HTTPIE_METHODS else "GET"
    url = operands.pop(0) if operands else ""
    host = "localhost" if url.startswith(":") else host_of(url, bare_names=True)
    out.network(f"{command.program} sends an HTTP request", [host])
    if operands or method in _SENDING_METHODS:
        out.add(_C.EXTERNAL_COMMUNICATION, f"{command.program} sends data to a remote host")


def _network_client(command: Command, out: Findings) -> None:
    """nc, telnet, ftp, ping, dig …: hosts from URLs and host-like operands; unscoped if unsure."""
    hosts = url_destinations(urls_in(command.args), out)
    unsure = False
    for arg in command.args:
        if arg.startswith("-") or "://" in arg or arg.isdigit():
            continue
        host = host_of(arg.lstrip("@"), bare_names=False)
        if host is None:
            unsure = True
        else:
            hosts.append(host)
    if unsure or not hosts:
        hosts.append(None)
    out.network(f"{command.program} talks to a network host", hosts)
    executes = {"--exec", "--sh-exec", "--lua-exec"}
    if command.program == "nc" and (any(arg.split("=")[0] in executes for arg in command.args)
                                    or set(short_letters(command.args)) & {"e", "c"}):  # `-e`, `-lve`
        out.unknowable("nc -e/-c runs a program fed by the network")
    if command.program == "socat" and any(arg.upper().startswith(("EXEC:", "SYSTEM:")) for arg in command.args):
        out.unknowable("socat EXEC:/SYSTEM: runs a program fed by the network")


_SSH: Final = option_grammar(short_values="BbcDEeFIiJLlmOopQRSWw", stop_at_operand=True)
_CODE_RUNNING_SSH_OPTIONS: Final = ("proxycommand", "localcommand", "permitlocalcommand", "knownhostscommand",
                                    "remotecommand", "match")


def _ssh_options(parsed: Parsed, program: str, out: Findings) -> list[str | None]:
    hosts: list[str | None] = []
    for value in parsed.values("-o"):
        if value.lower().replace(" ", "").startswith(_CODE_RUNNING_SSH_OPTIONS):
            out.unknowable(f"{program} -o {shown(value)} runs a local command")
        if value.lower().startswith("proxyjump"):
            hosts.extend(host_of(jump, bare_names=True) for jump in re.split(r"[=\s,]+", value)[1:] if jump)
    if parsed.has("-F", "-S"):
        out.add(_C.PRIVILEGED, f"{program} -F/-S picks a config file or program that can run commands")
    if parsed.has("-i", "-A", "-I"):
        out.add(_C.CREDENTIAL, f"{program} uses a private key or forwards the agent")
    for jumps in parsed.values("-J"):
        hosts.extend(host_of(jump, bare_names=True) for jump in jumps.split(","))
    return hosts


def _ssh(command: Command, out: Findings) -> None:
    parsed = parse_options(command.args, _SSH)
    if parsed is None or not parsed.operands:
        out.network(f"{command.program} opens a network connection", [None])
        return
    if command.program == "ssh" and len(parsed.operands) > 1:
        # ssh reads options again after the destination, up to the remote command (`ssh host -o …`).
        after = parse_options(parsed.operands[1:], _SSH) or Parsed(options=(), operands=())
        parsed = Parsed(options=parsed.options + after.options, operands=parsed.operands[:1] + after.operands)
    hosts = _ssh_options(parsed, command.program, out)
    hosts.append(host_of(parsed.operands[0], bare_names=True))
    out.network(f"{command.program} logs in to a remote host", hosts)
    if command.program == "ssh-copy-id":
        out.add(_C.CREDENTIAL, "ssh-copy-id installs a key on a remote host")


def _copy_destination(word: str) -> str | bool:
    """A remote copy operand's host; True for a remote with an unreadable host; False if local."""
    if "://" in word:
        return url_host(word) or True
    if word.startswith(("/", "./", "../", "~")) or DRIVE.match(word):
        return False
    match = REMOTE_SPEC.fullmatch(word)
    if match is None:
        return False
    return normalize_host(match.group(1), bare_names=True) or True


def _remote_copy(command: Command, out: Findings) -> None:
    """scp, sftp, rsync: network only when an operand names a remote (``host:path``, a URL)."""
    is_rsync = command.program == "rsync"
    grammar = (
        option_grammar(short_values="eBfMT", long_values="--rsh --rsync-path --exclude --include --filter "
                       "--files-from --exclude-from --include-from --password-file --log-file --temp-dir "
                       "--compare-dest --copy-dest --link-dest --backup-dir --suffix --chmod --chown",
                       stop_at_operand=False)
        if is_rsync
        else option_grammar(short_values="cDFiJloPSX", stop_at_operand=False)
    )
    parsed = parse_options(command.args, grammar) or Parsed(options=(), operands=tuple(command.args))
    hosts: list[str | None] = [] if is_rsync else _ssh_options(parsed, command.program, out)
    remote = command.program == "sftp"
    for operand in parsed.operands:
        destination = _copy_destination(operand)
        if destination is False:
            continue
        remote = True
        hosts.append(destination if isinstance(destination, str) else None)
    for shell in parsed.values("-e", "--rsh"):
        run_script(shell, command, out)
    if is_rsync and any(name.startswith(("--delete", "--remove-source")) for name, _ in parsed.options):
        out.add(_C.DESTRUCTIVE, "rsync --delete removes files at the destination")
    if parsed.has("--password-file"):
        out.add(_C.CREDENTIAL, "rsync reads a password file")
    if remote:
        out.network(f"{command.program} copies to or from a remote host", hosts)


def _openssl(command: Command, out: Findings) -> None:
    if command.args and command.args[0] in {"s_client", "s_server", "ocsp", "s_time"}:
        connects = [value for name, value in zip(command.args, command.args[1:], strict=False)
                    if name in {"-connect", "-host"}]
        out.network(f"openssl {command.args[0]} opens a TLS connection",
                    [host_of(value, bare_names=True) for value in connects])


def _cloud_cli(command: Command, out: Findings) -> None:
    out.network(f"{command.program} talks to a cloud API", [None])
    out.add(_C.CREDENTIAL, f"{command.program} uses cloud credentials")


_NETWORK_CLIENTS: Final = (
    "nc socat telnet ftp tftp lftp mosh ping ping6 dig nslookup host whois traceroute tracepath mtr nmap "
    "ssh-keyscan websocat grpcurl aria2c ngrok open xdg-open sensible-browser w3m lynx links elinks "
    "ftpget ftpput ssl_client httpd ftpd pscan rdate arping ether-wake ntpd sntp ntpdate nbd-client udhcpc "
    "udhcpd dhcprelay lpr lpq ztcp"
)  # the second half: busybox applets (also run as `busybox APPLET`) and zsh's ztcp
_NETWORK_SERVERS: Final = "tcpsvd udpsvd inetd telnetd"  # they run programs fed by the network


def _network_server(command: Command, out: Findings) -> None:
    out.network(f"{command.program} serves network connections", [None])
    out.unknowable(f"{command.program} runs programs fed by the network")
_CLOUD_CLIS: Final = "aws gcloud gsutil az doctl flyctl fly heroku vercel netlify firebase terraform pulumi " \
    "kubectl helm oc eksctl vault"

NETWORK_PROGRAMS: Final[Mapping[str, Handler]] = {
    **dict.fromkeys(table_words(_NETWORK_CLIENTS), _network_client),
    **dict.fromkeys(table_words(_CLOUD_CLIS), _cloud_cli),
    **dict.fromkeys(table_words(_NETWORK_SERVERS), _network_server),
    "curl": _curl, "wget": _wget, "http": _httpie, "ssh": _ssh, "ssh-copy-id": _ssh, "scp": _remote_copy,
    "sftp": _remote_copy, "rsync": _remote_copy, "openssl": _openssl,
}  # fmt: skip
"""Programs that talk to network hosts, by name."""
