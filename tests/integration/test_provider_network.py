"""Provider calls through a proxy and with a private CA (issue 21 item 5), over real loopback HTTP(S): a forwarding
proxy on 127.0.0.1 that relays what it is sent, and a provider server presenting a certificate made here with the
openssl CLI. Without a ``[network]`` table nothing goes through the proxy (the environment's variables are ignored);
with it, the request travels through the proxy to the same endpoint, and the endpoint approval still applies to that
endpoint (refused before anything reaches the proxy). An untrusted certificate is refused, naming the setting that
trusts it; the CA bundle makes the same call succeed."""

from __future__ import annotations

import http.client
import shutil
import ssl
import subprocess
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from codeflux.coordinator.spending.budget import BudgetService
from codeflux.coordinator.spending.gateway import ModelGateway, ModelRoute
from codeflux.credentials.secret import Secret
from codeflux.domain.errors import EndpointApprovalRequiredError, InvalidValueError, ProviderUnavailableError
from codeflux.domain.ids import TaskId
from codeflux.domain.ladder import LadderPosition
from codeflux.domain.models import Message, ModelRequest
from codeflux.domain.money import USD, Money
from codeflux.domain.providers import ProviderName
from codeflux.domain.tasks import TaskState
from codeflux.domain.user_config import ConfiguredNetwork
from codeflux.providers.anthropic import AnthropicAdapter
from codeflux.providers.network import network_policy
from codeflux.providers.registry import build_model_adapter
from codeflux.store.database import Database
from codeflux.store.tasks import insert_task
from tests.fixtures.provider_servers import (
    ProviderServer,
    a_test_key,
    anthropic_message,
    json_reply,
    openai_completion,
)

REQUEST = ModelRequest(model="claude-sonnet-4-5", system="You are terse.", messages=(Message.user_text("Hi."),),
                       max_output_tokens=64)
KEY = Secret(a_test_key())


def held(_: ProviderName) -> Secret:
    return KEY


class ForwardingProxy:
    """An HTTP proxy on loopback for plain-http targets: it reads the absolute-form request line a client sends a
    proxy, relays the request to that host and the reply back, and records each request line."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                return

            def do_POST(self) -> None:
                proxy.lines.append(self.requestline)
                target = urlsplit(self.path)
                body = self.rfile.read(int(self.headers.get("content-length", "0")))
                upstream = http.client.HTTPConnection(target.hostname or "", target.port, timeout=10)
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("proxy-connection", "host")}
                upstream.request("POST", target.path + (f"?{target.query}" if target.query else ""), body, headers)
                reply = upstream.getresponse()
                data = reply.read()
                self.send_response(reply.status)
                for name, value in reply.getheaders():
                    if name.lower() not in ("transfer-encoding", "content-length", "connection"):
                        self.send_header(name, value)
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                upstream.close()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=10)


@pytest.fixture
def proxy() -> Iterator[ForwardingProxy]:
    running = ForwardingProxy()
    yield running
    running.close()


@pytest.fixture
def server() -> Iterator[ProviderServer]:
    with ProviderServer() as running:
        yield running


def test_without_a_network_table_the_environments_proxy_is_not_used(proxy: ForwardingProxy,
                                                                     server: ProviderServer) -> None:
    server.enqueue(json_reply(openai_completion(content="direct")))
    environ = {"HTTP_PROXY": proxy.url, "http_proxy": proxy.url}
    with build_model_adapter("openai-compatible", base_url=server.base_url + "/v1", uses_key=False,
                             environ=environ) as adapter:
        assert adapter.complete(REQUEST).text == "direct"
    assert proxy.lines == [] and [r.path for r in server.requests] == ["/v1/chat/completions"]


@pytest.mark.parametrize("network", [ConfiguredNetwork(proxy="environment"), None])
def test_the_config_files_proxy_carries_the_call_to_the_same_endpoint(
        proxy: ForwardingProxy, server: ProviderServer, network: ConfiguredNetwork | None) -> None:
    chosen = network or ConfiguredNetwork(proxy=proxy.url)  # "environment", then an explicit proxy URL
    server.enqueue(json_reply(openai_completion(content="through the proxy")))
    with build_model_adapter("openai-compatible", base_url=server.base_url + "/v1", uses_key=False,
                             network=chosen, environ={"HTTP_PROXY": proxy.url}) as adapter:
        assert adapter.complete(REQUEST).text == "through the proxy"
    assert proxy.lines == [f"POST {server.base_url}/v1/chat/completions HTTP/1.1"]
    assert [r.path for r in server.requests] == ["/v1/chat/completions"]


def test_no_proxy_exempts_a_local_endpoint(proxy: ForwardingProxy, server: ProviderServer) -> None:
    server.enqueue(json_reply(openai_completion(content="direct")))
    environ = {"HTTP_PROXY": proxy.url, "NO_PROXY": "localhost,127.0.0.1"}
    with build_model_adapter("openai-compatible", base_url=server.base_url + "/v1", uses_key=False,
                             network=ConfiguredNetwork(proxy="environment"), environ=environ) as adapter:
        adapter.complete(REQUEST)
    assert proxy.lines == [] and len(server.requests) == 1


def test_the_endpoint_approval_still_applies_through_a_proxy(db: Database, tmp_path: Path, proxy: ForwardingProxy,
                                                             server: ProviderServer) -> None:
    task_id = TaskId.parse("tsk_0123456789abcdef")
    db.write(lambda tx: insert_task(tx, task_id=task_id, repository_root=tmp_path / "repo",
                                    worktree=tmp_path / "worktree", state=TaskState.RUNNING))
    BudgetService(db).set_budget(task_id, hard_limit=Money(minor=1_000, currency=USD), expected_revision=None,
                                 idempotency_key="budget-1")
    policy = network_policy(None, ConfiguredNetwork(proxy=proxy.url), endpoint=server.base_url, environ={})
    with AnthropicAdapter(base_url=server.base_url, key_loader=held, policy=policy) as adapter:
        route = ModelRoute(provider="anthropic", adapter=adapter, cheap_model="claude-sonnet-4-5",
                           capable_model="claude-sonnet-4-5")
        with pytest.raises(EndpointApprovalRequiredError) as refused:
            ModelGateway(db, [route]).call(task_id, REQUEST, position=LadderPosition.start(), idempotency_key="c-1")
    assert refused.value.base_url == server.base_url
    assert proxy.lines == [] and server.requests == []


@pytest.fixture
def certificate(tmp_path: Path) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 (and its key), made with the openssl CLI."""
    if shutil.which("openssl") is None:
        pytest.fail("openssl is needed (Debian's openssl package, installed with the system)")
    cert, key = tmp_path / "ca.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out",
                    str(cert), "-days", "2", "-subj", "/CN=codeflux test CA", "-addext",
                    "subjectAltName=IP:127.0.0.1"], check=True, capture_output=True, timeout=60)
    return cert, key


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[ProviderServer]:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certfile=certificate[0], keyfile=certificate[1])
    with ProviderServer(tls=context) as running:
        yield running


def _anthropic(server: ProviderServer, network: ConfiguredNetwork | None) -> AnthropicAdapter:
    return AnthropicAdapter(base_url=server.base_url, key_loader=held,
                            policy=network_policy(None, network, endpoint=server.base_url, environ={}))


def test_an_untrusted_certificate_is_refused_naming_the_setting_and_the_ca_bundle_trusts_it(
        tls_server: ProviderServer, certificate: tuple[Path, Path]) -> None:
    assert tls_server.base_url.startswith("https://127.0.0.1:")
    with _anthropic(tls_server, None) as adapter, pytest.raises(ProviderUnavailableError) as refused:
        adapter.complete(REQUEST)
    assert "TLS certificate is not trusted" in str(refused.value)
    assert "[network] ca_bundle" in str(refused.value)
    assert tls_server.requests == []

    tls_server.enqueue(json_reply(anthropic_message(content=[{"type": "text", "text": "trusted"}],
                                                    usage={"input_tokens": 5, "output_tokens": 1})))
    with _anthropic(tls_server, ConfiguredNetwork(ca_bundle=str(certificate[0]))) as adapter:
        assert adapter.complete(REQUEST).text == "trusted"
    assert [r.path for r in tls_server.requests] == ["/v1/messages"]


def test_a_ca_bundle_that_is_not_pem_certificates_is_refused_naming_the_setting(tmp_path: Path) -> None:
    bogus = tmp_path / "not-a-cert.pem"
    bogus.write_text("hello\n")
    for path in (bogus, tmp_path / "missing.pem"):
        with pytest.raises(InvalidValueError) as refused:
            AnthropicAdapter(key_loader=held, policy=network_policy(None, ConfiguredNetwork(ca_bundle=str(path)),
                                                                    endpoint="https://api.anthropic.com", environ={}))
        assert "[network] ca_bundle" in str(refused.value) and str(path) in str(refused.value)
