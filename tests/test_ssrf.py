"""The SSRF guard on team-registered endpoint URLs (evaluator/prompters/ssrf.py).

Address classes, schemes, userinfo, the allow-list, and the connection-time check against
a real local HTTP server: DNS rebinding is refused before any byte reaches the server, IP
pinning keeps the Host header, redirects are not followed, and the real openai client works
through the guarded httpx client.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import openai
import pytest

from evaluator.prompters.ssrf import (
    GuardedTransport,
    UnsafeURL,
    check_address,
    check_url,
    guarded_client,
    httpx,  # httpx2 where installed (openai 3.x), else httpx
)

PUBLIC_V4 = "93.184.215.14"
PUBLIC_V6 = "2606:4700::1111"
CHAT_COMPLETION = {
    "id": "c1",
    "object": "chat.completion",
    "created": 0,
    "model": "m",
    "choices": [{"index": 0, "message": {"role": "assistant", "content": "a prompt"}, "finish_reason": "stop"}],
    "usage": {"prompt_tokens": 3, "completion_tokens": 2, "total_tokens": 5},
}


def resolver_for(table: dict[str, list[str]]):
    """A resolver answering from `table` (and failing like getaddrinfo for any other name)."""

    def resolve(host: str, port: int) -> list[str]:
        if host not in table:
            raise OSError(f"unknown host {host}")
        return list(table[host])

    return resolve


# ---- addresses -------------------------------------------------------------------------------

REFUSED = [
    ("127.0.0.1", "loopback"),
    ("::1", "loopback"),
    ("10.1.2.3", "private"),
    ("172.16.0.1", "private"),
    ("192.168.1.1", "private"),
    ("169.254.169.254", "link-local"),
    ("224.0.0.1", "multicast"),
    ("240.0.0.1", "reserved"),
    ("0.0.0.0", "unspecified"),
    ("100.64.0.1", "carrier-grade NAT"),
    ("::ffff:127.0.0.1", "loopback"),
    ("fe80::1", "link-local"),
    ("fc00::1", "private"),
    ("fd00:ec2::254", "private"),
    ("::ffff:169.254.169.254", "link-local"),
]


@pytest.mark.parametrize(("address", "kind"), REFUSED, ids=[a for a, _ in REFUSED])
def test_internal_address_is_refused_naming_its_class(address, kind):
    with pytest.raises(UnsafeURL) as refused:
        check_address(address)
    assert f"{address} is a {kind} address" in str(refused.value)
    assert "ATELIER_PROMPTER_ALLOWED_HOSTS" in str(refused.value)


@pytest.mark.parametrize(
    ("address", "note"),
    [
        ("169.254.169.254", "(the cloud metadata service)"),
        ("fd00:ec2::254", "(the cloud metadata service)"),
        ("::ffff:169.254.169.254", "(IPv4-mapped 169.254.169.254; the cloud metadata service)"),
        ("2002:a00:1::", "(embeds IPv4 10.0.0.1)"),  # 6to4
        ("64:ff9b::7f00:1", "(embeds IPv4 127.0.0.1)"),  # NAT64
    ],
)
def test_refusal_notes_metadata_and_embedded_ipv4(address, note):
    with pytest.raises(UnsafeURL) as refused:
        check_address(address)
    assert f"{address} is a " in str(refused.value)
    assert note in str(refused.value)


@pytest.mark.parametrize(("address", "kind"), REFUSED[:4], ids=[a for a, _ in REFUSED[:4]])
def test_url_with_internal_literal_is_refused(address, kind):
    host = f"[{address}]" if ":" in address else address
    url = f"http://{host}:8000/v1"
    with pytest.raises(UnsafeURL, match=f"^{re.escape(url)}: {re.escape(address)} is a {kind} address; only public addresses"):
        check_url(url)


@pytest.mark.parametrize("address", [PUBLIC_V4, PUBLIC_V6])
def test_public_address_passes(address):
    check_address(address)  # raises if refused
    host = f"[{address}]" if ":" in address else address
    assert check_url(f"https://{host}/v1") == [address]


def test_spec_example_message():
    with pytest.raises(UnsafeURL) as refused:
        check_url("http://10.0.0.5/v1")
    assert str(refused.value) == (
        "http://10.0.0.5/v1: 10.0.0.5 is a private address; only public addresses may be called "
        "(a deployer can allow a host with ATELIER_PROMPTER_ALLOWED_HOSTS)"
    )


# ---- URL shape -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "scheme"), [("ftp://example.com/v1", "ftp"), ("file:///etc/passwd", "file"), ("gopher://example.com:70/_x", "gopher")]
)
def test_other_schemes_are_refused_naming_the_scheme(url, scheme):
    with pytest.raises(UnsafeURL, match=f"scheme '{scheme}' is not allowed"):
        check_url(url, resolver=resolver_for({"example.com": [PUBLIC_V4]}))


@pytest.mark.parametrize("url", ["http://user:pw@example.com/v1", "https://user@example.com/v1"])
def test_userinfo_is_refused(url):
    with pytest.raises(UnsafeURL, match="userinfo"):
        check_url(url, resolver=resolver_for({"example.com": [PUBLIC_V4]}))


@pytest.mark.parametrize("url", ["http:///v1", "https://:443/v1"])
def test_missing_host_is_refused(url):
    with pytest.raises(UnsafeURL, match="names no host|not a valid URL"):
        check_url(url)


def test_unresolvable_host_is_refused():
    with pytest.raises(UnsafeURL, match="does not resolve"):
        check_url("https://nowhere.test/v1", resolver=resolver_for({}))
    with pytest.raises(UnsafeURL, match="does not resolve"):
        check_url("https://empty.test/v1", resolver=resolver_for({"empty.test": []}))


def test_name_resolving_to_a_public_and_a_private_address_is_refused():
    resolve = resolver_for({"mixed.test": [PUBLIC_V4, "10.9.8.7"]})
    with pytest.raises(UnsafeURL, match="10.9.8.7 is a private address"):
        check_url("https://mixed.test/v1", resolver=resolve)
    assert check_url("https://public.test/v1", resolver=resolver_for({"public.test": [PUBLIC_V4, PUBLIC_V6]})) == [PUBLIC_V4, PUBLIC_V6]


@pytest.mark.parametrize("host", ["localhost", "2130706433", "0x7f.1", "127.1"])
def test_default_resolver_sees_through_other_spellings_of_loopback(host):
    with pytest.raises(UnsafeURL, match="127.0.0.1 is a loopback address"):
        check_url(f"http://{host}:8000/v1")


def test_resolver_gets_the_host_and_default_port():
    seen = []

    def resolve(host, port):
        seen.append((host, port))
        return [PUBLIC_V4]

    check_url("https://API.Example.test/v1", resolver=resolve)
    check_url("http://api.example.test:8080/v1", resolver=resolve)
    assert seen == [("api.example.test", 443), ("api.example.test", 8080)]


# ---- allow-list ------------------------------------------------------------------------------


def test_allow_list_lets_an_ip_literal_or_network_through():
    url = "http://127.0.0.1:8000/v1"
    with pytest.raises(UnsafeURL, match="loopback"):
        check_url(url)
    assert check_url(url, allowed=["127.0.0.1"]) == ["127.0.0.1"]
    assert check_url(url, allowed=["127.0.0.0/8"]) == ["127.0.0.1"]
    with pytest.raises(UnsafeURL, match="loopback"):
        check_url(url, allowed=["10.0.0.0/8", "localhost"])


def test_allow_list_by_host_name_is_exact_and_case_insensitive():
    resolve = resolver_for({"prompter.internal": ["10.0.0.7"], "x.prompter.internal": ["10.0.0.8"]})
    assert check_url("http://Prompter.Internal/v1", allowed=["PROMPTER.internal"], resolver=resolve) == ["10.0.0.7"]
    with pytest.raises(UnsafeURL, match="private"):
        check_url("http://x.prompter.internal/v1", allowed=["prompter.internal"], resolver=resolve)
    with pytest.raises(UnsafeURL, match="private"):
        check_url("http://prompter.internal/v1", resolver=resolve)


def test_allow_list_network_must_cover_every_internal_address():
    resolve = resolver_for({"two.test": ["10.0.0.7", "192.168.0.7"]})
    with pytest.raises(UnsafeURL, match="192.168.0.7 is a private address"):
        check_url("http://two.test/v1", allowed=["10.0.0.0/8"], resolver=resolve)
    assert check_url("http://two.test/v1", allowed=["10.0.0.0/8", "192.168.0.0/16"], resolver=resolve)


def test_allow_list_entry_with_a_port_lets_that_host_through_on_that_port_only():
    assert check_url("http://127.0.0.1:8765/v1", allowed=["127.0.0.1:8765"]) == ["127.0.0.1"]
    for other in ("http://127.0.0.1:8766/v1", "http://127.0.0.1/v1", "http://127.0.0.2:8765/v1"):
        with pytest.raises(UnsafeURL, match="loopback"):
            check_url(other, allowed=["127.0.0.1:8765"])
    assert check_url("http://[::1]:9000/v1", allowed=["[::1]:9000"]) == ["::1"]
    with pytest.raises(UnsafeURL, match="loopback"):
        check_url("http://[::1]:9001/v1", allowed=["[::1]:9000"])
    resolve = resolver_for({"prompter.internal": ["10.0.0.7"]})
    assert check_url("https://Prompter.Internal/v1", allowed=["prompter.internal:443"], resolver=resolve) == ["10.0.0.7"]
    with pytest.raises(UnsafeURL, match="private"):
        check_url("http://prompter.internal/v1", allowed=["prompter.internal:443"], resolver=resolve)


# ---- a real local server ---------------------------------------------------------------------


@dataclass
class Server:
    port: int
    requests: list[dict] = field(default_factory=list)
    reply: tuple[int, dict[str, str], bytes] = (200, {"Content-Type": "application/json"}, b"{}")
    handler: type[BaseHTTPRequestHandler] | None = None


@pytest.fixture
def server() -> Iterator[Server]:
    """A ThreadingHTTPServer on 127.0.0.1 that records each request (path, Host header) and answers `reply`."""
    state = Server(port=0)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, so a reused connection would show

        def _answer(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            state.requests.append({"method": self.command, "path": self.path, "host": self.headers.get("Host"), "body": body})
            status, headers, payload = state.reply
            self.send_response(status)
            for name, value in headers.items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    state.handler = Handler
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.port = httpd.server_address[1]
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)


def test_the_server_fixture_counts_requests(server):
    """The fixture itself works, so 'the server saw nothing' below means something."""
    with httpx.Client() as client:
        assert client.get(f"http://127.0.0.1:{server.port}/ping").status_code == 200
    assert [r["path"] for r in server.requests] == ["/ping"]


def test_dns_rebinding_is_refused_at_connection_time(server):
    answers = iter([PUBLIC_V4, "127.0.0.1"])
    calls = []

    def rebinding(host, port):
        calls.append((host, port))
        return [next(answers)]

    url = f"http://rebind.test:{server.port}/v1/models"
    assert check_url(url, resolver=rebinding) == [PUBLIC_V4]  # registration: looks public
    with guarded_client(resolver=rebinding) as client, pytest.raises((UnsafeURL, httpx.HTTPError)) as refused:
        client.get(url)
    assert "127.0.0.1 is a loopback address" in str(refused.value)
    assert calls == [("rebind.test", server.port)] * 2  # the transport resolved the name itself
    assert server.requests == []


def test_literal_internal_address_is_refused_by_the_transport(server):
    with guarded_client() as client, pytest.raises(UnsafeURL, match="loopback"):
        client.get(f"http://127.0.0.1:{server.port}/")
    with guarded_client() as client, pytest.raises(UnsafeURL, match="scheme"):
        client.get("ftp://127.0.0.1/")
    assert server.requests == []


def test_unresolvable_host_at_call_time_is_a_connect_error():
    """At call time a DNS failure is what a plain client reports (openai retries it), not a refusal."""
    with guarded_client(resolver=resolver_for({})) as client, pytest.raises(httpx.ConnectError, match="does not resolve"):
        client.get("http://gone.test/v1/models")


def test_environment_proxy_does_not_bypass_the_guard(server, monkeypatch):
    """httpx ignores HTTP(S)_PROXY when a transport is given: the guard always makes the connection."""
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.setenv(name, f"http://127.0.0.1:{server.port}")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with guarded_client(resolver=resolver_for({"internal.test": ["10.0.0.9"]})) as client:
        with pytest.raises(UnsafeURL, match="10.0.0.9 is a private address"):
            client.get("http://internal.test/latest/meta-data/")
    assert server.requests == []


def test_pinned_ip_keeps_the_host_header(server):
    resolve = resolver_for({"prompter.test": ["127.0.0.1"]})
    with guarded_client(allowed=["127.0.0.1"], resolver=resolve) as client:
        response = client.get(f"http://prompter.test:{server.port}/v1/models")
    assert response.status_code == 200
    assert str(response.request.url) == f"http://prompter.test:{server.port}/v1/models"
    assert [(r["path"], r["host"]) for r in server.requests] == [("/v1/models", f"prompter.test:{server.port}")]


def test_allowed_host_name_is_pinned_too(server):
    """An allow-listed name skips the address check but still connects to the address resolved once."""
    resolve = resolver_for({"Prompter.Internal": ["127.0.0.1"], "prompter.internal": ["127.0.0.1"]})
    with guarded_client(allowed=["prompter.internal"], resolver=resolve) as client:
        assert client.get(f"http://prompter.internal:{server.port}/x").status_code == 200
    assert server.requests[0]["host"] == f"prompter.internal:{server.port}"


def test_port_scoped_entry_holds_at_connection_time(server):
    with guarded_client(allowed=[f"127.0.0.1:{server.port}"]) as client:
        assert client.get(f"http://127.0.0.1:{server.port}/x").status_code == 200
        with pytest.raises(UnsafeURL, match="loopback"):
            client.get(f"http://127.0.0.1:{server.port + 1}/x")
    assert len(server.requests) == 1


def test_unreachable_address_falls_back_to_the_next_checked_one(server):
    """::1 refuses the connection (the server listens on 127.0.0.1 only): the next checked address is tried."""
    resolve = resolver_for({"two.test": ["::1", "127.0.0.1"]})
    with guarded_client(allowed=["127.0.0.1", "::1"], resolver=resolve) as client:
        assert client.get(f"http://two.test:{server.port}/x").status_code == 200
    assert len(server.requests) == 1


def test_redirects_are_not_followed(server):
    server.reply = (302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b"")
    with guarded_client(allowed=["127.0.0.1"]) as client:
        response = client.get(f"http://127.0.0.1:{server.port}/v1/models")
    assert response.status_code == 302
    assert response.headers["location"] == "http://169.254.169.254/latest/meta-data/"
    assert response.next_request is not None  # httpx would have followed it, had it been allowed to
    assert len(server.requests) == 1


def test_sni_hostname_is_the_original_name_for_https():
    """For https the request goes to the IP, and sni_hostname carries the name TLS must verify."""
    seen = []

    def fake_send(request):
        seen.append((str(request.url), request.headers["host"], request.extensions.get("sni_hostname")))
        return httpx.Response(204)

    transport = GuardedTransport(resolver=resolver_for({"api.example.test": [PUBLIC_V6]}))
    transport._tls_pool("api.example.test").handle_request = fake_send
    with httpx.Client(transport=transport) as client:
        assert client.get("https://api.example.test/v1/models").status_code == 204
    assert seen == [(f"https://[{PUBLIC_V6}]/v1/models", "api.example.test", "api.example.test")]


def self_signed(tmp_path, name: str) -> tuple[str, str]:
    """A certificate (and key) for `name`, files under tmp_path: the test's own CA of one."""
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    subject = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, name)])
    now = datetime.datetime.now(datetime.UTC)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName(name)]), critical=False)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_file, key_file = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert_file.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return str(cert_file), str(key_file)


def test_https_to_the_pinned_ip_verifies_the_certificate_for_the_name(server, tmp_path):
    """A real TLS handshake with 127.0.0.1: SNI is the name and the certificate is checked against it."""
    import ssl

    cert_file, key_file = self_signed(tmp_path, "prompter.test")
    server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server_context.load_cert_chain(cert_file, key_file)
    sni = []
    server_context.sni_callback = lambda sock, name, ctx: sni.append(name)
    tls = ThreadingHTTPServer(("127.0.0.1", 0), server.handler)
    tls.socket = server_context.wrap_socket(tls.socket, server_side=True)
    port = tls.server_address[1]
    thread = threading.Thread(target=tls.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    client_context = ssl.create_default_context(cafile=cert_file)
    resolve = resolver_for({"prompter.test": ["127.0.0.1"], "other.test": ["127.0.0.1"]})
    try:
        transport = GuardedTransport(allowed=["127.0.0.1"], resolver=resolve, verify=client_context)
        with httpx.Client(transport=transport) as client:
            assert client.get(f"https://prompter.test:{port}/v1/models").status_code == 200
            # same IP, a name the certificate does not cover: verified again on its own connection, and refused
            with pytest.raises(httpx.ConnectError, match="(?i)certificate|hostname"):
                client.get(f"https://other.test:{port}/v1/models")
    finally:
        tls.shutdown()
        tls.server_close()
        thread.join(5)
    assert sni[:2] == ["prompter.test", "other.test"]
    assert [(r["path"], r["host"]) for r in server.requests] == [("/v1/models", f"prompter.test:{port}")]


def test_each_https_name_gets_its_own_pool_and_close_closes_them():
    transport = GuardedTransport()
    first = transport._tls_pool("api.example.test")
    assert transport._tls_pool("API.example.test.") is first
    assert transport._tls_pool("other.example.test") is not first
    with httpx.Client(transport=transport):
        pass
    assert transport._tls_pools == {}


# ---- the openai client -----------------------------------------------------------------------


def test_openai_client_works_through_the_guard(server):
    server.reply = (200, {"Content-Type": "application/json"}, json.dumps(CHAT_COMPLETION).encode())
    client = openai.OpenAI(
        base_url=f"http://127.0.0.1:{server.port}/v1", api_key="x", http_client=guarded_client(allowed=["127.0.0.1"]), max_retries=0
    )
    completion = client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert completion.choices[0].message.content == "a prompt"
    assert [(r["method"], r["path"]) for r in server.requests] == [("POST", "/v1/chat/completions")]


def test_openai_client_without_allow_list_is_refused(server):
    """openai 3.x (httpx2) only wraps httpx RequestErrors, so UnsafeURL comes out as itself and is not
    retried; older openai releases wrapped every exception as APIConnectionError. Either way it is in the chain."""
    server.reply = (200, {"Content-Type": "application/json"}, json.dumps(CHAT_COMPLETION).encode())
    sent = []
    http = guarded_client()
    http.event_hooks = {"request": [sent.append], "response": []}
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.port}/v1", api_key="x", http_client=http, max_retries=0)
    with pytest.raises((UnsafeURL, openai.APIConnectionError)) as failed:
        client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    assert len(sent) == 1
    chain, error = [], failed.value
    while error is not None and len(chain) < 10:
        chain.append(error)
        error = error.__cause__ or error.__context__
    unsafe = [e for e in chain if isinstance(e, UnsafeURL)]
    assert unsafe and "127.0.0.1 is a loopback address" in str(unsafe[0])
    assert server.requests == []
