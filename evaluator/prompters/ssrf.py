"""Keep team-registered endpoint URLs from reaching internal addresses (SSRF guard).

A team registers the URL of an OpenAI-compatible endpoint and our server calls it. Without
a guard that URL could point at the server's own loopback services, the private network,
or the cloud metadata service. The rules:

* the scheme is ``http`` or ``https``; the URL names a host; it carries no userinfo
  (``user:pass@``);
* the host is resolved (every IPv4 and IPv6 address ``getaddrinfo`` gives) and the URL is
  refused if ANY address is unspecified, loopback, link-local (169.254.169.254, the cloud
  metadata service, is link-local; its IPv6 twin fd00:ec2::254 is private), multicast,
  reserved, carrier-grade NAT (100.64.0.0/10), private, or otherwise not globally
  routable. IPv6 forms that embed an IPv4 address (IPv4-mapped ``::ffff:127.0.0.1``,
  6to4, NAT64) are judged by that IPv4 address too;
* an allow-list from the deployer (``ATELIER_PROMPTER_ALLOWED_HOSTS``) lets a host through:
  either its name equals an entry (case-insensitive), or each resolved address lies inside
  an allow-listed IP literal or CIDR network. An entry ``host:port`` (``[v6]:port`` for
  IPv6) lets that host through on that port only: the demo allows its own scripted prompter
  (127.0.0.1 on one port) without opening every loopback service.

Checking the URL once, when it is registered, is not enough: DNS rebinding. A name the
team controls can resolve to a public address at registration and to 127.0.0.1 when we
call it (or between our own check and the client's connect). So the same check runs again
at connection time, in `GuardedTransport`: it resolves the host itself, checks every
address, and connects to the checked IP literal, so nothing re-resolves the name after
the check. The ``Host`` header keeps the original name, and for https the TLS SNI and
certificate check use the original name too. Redirects are not followed (a 302 to
http://169.254.169.254/ comes back to the caller as a 302).

The HTTP library is ``httpx2`` when installed (what openai 3.x uses; same API as httpx),
else ``httpx``; it is re-exported here as ``ssrf.httpx``. This module is a plain library:
no Django.
"""

from __future__ import annotations

import ipaddress
import re
import socket
import threading
from collections.abc import Callable, Collection, Iterable
from types import TracebackType
from typing import Any

try:  # openai 3.x speaks httpx2 (the maintained fork, same API); older openai releases speak httpx
    import httpx2 as httpx
except ImportError:  # pragma: no cover - depends on what is installed
    import httpx  # type: ignore[no-redef]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], list[str]]

ALLOWED_SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
HINT = "only public addresses may be called (a deployer can allow a host with ATELIER_PROMPTER_ALLOWED_HOSTS)"

CLOUD_METADATA = (ipaddress.ip_address("169.254.169.254"), ipaddress.ip_address("fd00:ec2::254"))
CARRIER_GRADE_NAT = ipaddress.ip_network("100.64.0.0/10")
NAT64 = ipaddress.ip_network("64:ff9b::/96")

# (class named in the message, test), checked in this order: the first match names the address.
ADDRESS_CLASSES: tuple[tuple[str, Callable[[Any], bool]], ...] = (
    ("unspecified", lambda a: a.is_unspecified),
    ("loopback", lambda a: a.is_loopback),
    ("link-local", lambda a: a.is_link_local),
    ("multicast", lambda a: a.is_multicast),
    ("reserved", lambda a: a.is_reserved),
    ("carrier-grade NAT", lambda a: a in CARRIER_GRADE_NAT),
    ("private", lambda a: a.is_private),
    ("non-public (not globally routable)", lambda a: not a.is_global),
)


class UnsafeURL(ValueError):
    """A URL (or an address it resolves to) that the server must not call."""


class _Unresolvable(UnsafeURL):
    """The host has no address: refused at registration, a connection error at call time."""


def _embedded_ipv4(address: IPAddress) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 address stands for (mapped, 6to4, NAT64), if any."""
    if not isinstance(address, ipaddress.IPv6Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _parse_address(address: str) -> IPAddress:
    try:
        return ipaddress.ip_address(address.strip())
    except ValueError:
        raise UnsafeURL(f"{address} is not an IP address") from None


def _address_class(address: IPAddress) -> tuple[str, list[str]] | None:
    """Why `address` is unfit to call: its class (e.g. "loopback") and notes; None for a public address."""
    notes = ["the cloud metadata service"] if address in CLOUD_METADATA else []
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        inner = _address_class(embedded)
        if inner is not None:
            how = "IPv4-mapped" if address.ipv4_mapped is not None else "embeds IPv4"
            return inner[0], [f"{how} {embedded}", *inner[1]]
    for name, test in ADDRESS_CLASSES:
        if test(address):
            return name, notes
    return None


def _in_networks(address: IPAddress, networks: Iterable[IPNetwork]) -> bool:
    candidates = [address]
    embedded = _embedded_ipv4(address)
    if embedded is not None:
        candidates.append(embedded)
    return any(a.version == n.version and a in n for a in candidates for n in networks)


def check_address(address: str, allowed_networks: Iterable[IPNetwork | str] = ()) -> None:
    """Raise UnsafeURL naming the address class unless `address` is public or inside `allowed_networks`."""
    parsed = _parse_address(address)
    networks = [n if not isinstance(n, str) else ipaddress.ip_network(n, strict=False) for n in allowed_networks]
    if _in_networks(parsed, networks):
        return
    refused = _address_class(parsed)
    if refused is not None:
        kind, notes = refused
        noted = f" ({'; '.join(notes)})" if notes else ""
        raise UnsafeURL(f"{address.strip()} is a {kind} address{noted}; {HINT}")


def parse_allowed(allowed: Collection[str]) -> tuple[frozenset[str], tuple[IPNetwork, ...]]:
    """Split an allow-list into lower-cased host names and IP networks (a literal is a /32 or /128)."""
    names: set[str] = set()
    networks: list[IPNetwork] = []
    for entry in allowed:
        entry = entry.strip()
        if not entry:
            continue
        try:
            networks.append(ipaddress.ip_network(entry.strip("[]"), strict=False))
        except ValueError:
            scoped = re.fullmatch(r"\[?([^\[\]]+?)\]?:(\d{1,5})", entry)
            if scoped:  # host:port, kept as one name that only a URL with that very host and port matches
                names.add(f"{scoped[1].lower().rstrip('.')}:{int(scoped[2])}")
            else:
                names.add(entry.lower().rstrip("."))
    return frozenset(names), tuple(networks)


def default_resolver(host: str, port: int) -> list[str]:
    """Every address (IPv4 and IPv6) `host` resolves to, in getaddrinfo's order, without repeats."""
    infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    addresses: list[str] = []
    for _family, _type, _proto, _canon, sockaddr in infos:
        address = str(sockaddr[0]).split("%", 1)[0]  # drop an IPv6 scope id
        if address not in addresses:
            addresses.append(address)
    return addresses


def _parse_url(url: httpx.URL | str) -> httpx.URL:
    if isinstance(url, httpx.URL):
        return url
    try:
        return httpx.URL(url)
    except (httpx.InvalidURL, TypeError, ValueError) as error:
        raise UnsafeURL(f"{url}: not a valid URL ({error})") from None


def _host_and_port(url: httpx.URL, shown: str) -> tuple[str, int]:
    """Check scheme, host and userinfo; return the host (ASCII, IPv6 without brackets) and port."""
    if url.scheme not in ALLOWED_SCHEMES:
        scheme = url.scheme or "(none)"
        raise UnsafeURL(f"{shown}: the scheme {scheme!r} is not allowed; only http and https URLs may be called")
    if url.userinfo:
        raise UnsafeURL(f"{shown}: the URL carries userinfo (user:password@); credentials belong in the API key, not the URL")
    host = url.raw_host.decode("ascii").strip("[]")
    if not host:
        raise UnsafeURL(f"{shown}: the URL names no host")
    return host, url.port or DEFAULT_PORTS[url.scheme]


def _resolve(host: str, port: int, resolver: Resolver | None, shown: str) -> list[str]:
    try:
        return [str(ipaddress.ip_address(host))]  # an IP literal needs no lookup
    except ValueError:
        pass
    try:
        addresses = list((resolver or default_resolver)(host, port))
    except (OSError, UnicodeError) as error:
        raise _Unresolvable(f"{shown}: the host {host} does not resolve ({error})") from None
    if not addresses:
        raise _Unresolvable(f"{shown}: the host {host} does not resolve (no addresses)")
    return addresses


def _checked_addresses(
    url: httpx.URL, shown: str, names: frozenset[str], networks: tuple[IPNetwork, ...], resolver: Resolver | None
) -> tuple[str, list[str]]:
    """The URL's host and its resolved addresses, each one checked (unless the name itself is allowed)."""
    host, port = _host_and_port(url, shown)
    addresses = _resolve(host, port, resolver, shown)
    name = host.lower().rstrip(".")
    if name in names or f"{name}:{port}" in names:
        return host, [str(_parse_address(a)) for a in addresses]
    for address in addresses:
        try:
            check_address(address, networks)
        except UnsafeURL as error:
            raise UnsafeURL(f"{shown}: {error}") from None
    return host, [str(_parse_address(a)) for a in addresses]


def check_url(url: str, allowed: Collection[str] = (), resolver: Resolver | None = None) -> list[str]:
    """Check a URL against the rules above and return the addresses its host resolves to (all checked)."""
    names, networks = parse_allowed(allowed)
    _, addresses = _checked_addresses(_parse_url(url), url, names, networks, resolver)
    return addresses


class GuardedTransport(httpx.HTTPTransport):
    """An httpx transport that checks every request's host at connection time and connects to the checked IP.

    The name is resolved here, every address is checked, and the request goes to an IP
    literal, so a name that re-resolves elsewhere after the check (DNS rebinding) cannot
    move the connection. The Host header and, for https, the TLS SNI / certificate name
    stay the original host name.
    """

    def __init__(self, allowed: Collection[str] = (), resolver: Resolver | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._names, self._networks = parse_allowed(allowed)
        self._resolver = resolver
        self._kwargs = kwargs
        # https connections are pooled by (scheme, IP, port); a connection whose certificate was
        # checked for one name must not be reused for another name on the same IP, so each
        # https host name gets its own pool.
        self._tls_pools: dict[str, httpx.HTTPTransport] = {}
        self._tls_lock = threading.Lock()

    def _tls_pool(self, host: str) -> httpx.HTTPTransport:
        key = host.lower().rstrip(".")
        with self._tls_lock:
            if key not in self._tls_pools:
                self._tls_pools[key] = httpx.HTTPTransport(**self._kwargs)
            return self._tls_pools[key]

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        """Check the request's host, then send it to the first checked address that accepts a connection."""
        url = request.url
        try:
            host, addresses = _checked_addresses(url, str(url), self._names, self._networks, self._resolver)
        except _Unresolvable as error:  # a DNS failure, as a plain client would report it (and openai retries)
            raise httpx.ConnectError(str(error), request=request) from None
        if "host" not in request.headers:  # httpx sets it when the Request is built; keep the name either way
            request.headers["Host"] = url.netloc.decode("ascii")
        send = super().handle_request
        if url.scheme == "https":
            request.extensions = {**request.extensions, "sni_hostname": host}
            send = self._tls_pool(host).handle_request
        error: httpx.ConnectError | None = None
        for address in addresses:  # every one was checked; try them in order, like a normal connect
            request.url = url.copy_with(host=address)
            try:
                return send(request)
            except httpx.ConnectError as failed:
                error = failed
            finally:
                request.url = url  # the response's request shows the name, not the IP
        assert error is not None
        raise error

    def _close_tls_pools(self) -> None:
        with self._tls_lock:
            pools, self._tls_pools = list(self._tls_pools.values()), {}
        for pool in pools:
            pool.close()

    def __exit__(
        self, exc_type: type[BaseException] | None = None, exc_value: BaseException | None = None, traceback: TracebackType | None = None
    ) -> None:
        # Client.__exit__ calls the transport's __exit__, not close(): both must close every pool
        self._close_tls_pools()
        super().__exit__(exc_type, exc_value, traceback)

    def close(self) -> None:
        self._close_tls_pools()
        super().close()


def guarded_client(allowed: Collection[str] = (), timeout: float = 30.0, resolver: Resolver | None = None) -> httpx.Client:
    """An httpx.Client for calling team endpoints: guarded transport, no redirects followed."""
    return httpx.Client(transport=GuardedTransport(allowed=allowed, resolver=resolver), follow_redirects=False, timeout=timeout)
