"""Requests to addresses that users name (the advice webhook, a Prometheus source): never into the operator's
own network.

The rule, checked when a URL is saved and again when it is sent:

- ``http`` or ``https`` only, and no ``user:password@`` in the URL;
- every address the host resolves to must be public: not loopback, private
  (10/8, 172.16/12, 192.168/16, fc00::/7), shared (100.64/10), link-local
  (169.254/16, where cloud metadata answers, and fe80::/10), multicast, reserved or
  unspecified (0.0.0.0, ::), nor such an address mapped into IPv6 (``::ffff:127.0.0.1``);
- unless the operator allows it by name in ``OUTBOUND_ALLOWED_HOSTS``: a host name
  or address, optionally with ``:port``, or a network (``10.20.0.0/16``).

When sent (:func:`send_check`), the name is resolved once and the connection goes to the address that
was checked, so a second answer from DNS cannot switch it (rebinding); https still
checks the certificate against the name. Redirects are not followed, nor proxies. A JSON POST
(:func:`post_json`) is sent here; a GET that a client of its own reads (the Prometheus import's
``common.http.JsonClient``) goes through :func:`pinned_opener`. For a POST, one deadline
covers connecting, sending and the whole answer (a target that drips its answer
is cut off at it), and at most ``OUTBOUND_MAX_RESPONSE_BYTES`` of the answer are read.

Errors say ``refused: ...`` (the rule said no; nothing was sent) or ``failed: ...``
(no complete answer, or a non-2xx status). They never carry the target's reply,
and a closed port reads the same as a silent one. With ``OUTBOUND_DELIVERY`` off
(the schema check sets it) no name is resolved and nothing is sent.
"""

from __future__ import annotations

import contextlib
import http.client
import ipaddress
import socket
import ssl
import threading
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
Resolver = Callable[..., Sequence[tuple[Any, ...]]]
# Shared address space (RFC 6598, carrier-grade NAT) is not "private" to the ipaddress module but is not public.
_SHARED = ipaddress.ip_network("100.64.0.0/10")
_READ_CHUNK = 4096


class OutboundRefused(ValueError):
    """The rule refuses the URL; nothing was sent. The message starts with ``refused:``."""


class OutboundFailed(OSError):
    """The target gave no complete 2xx answer in time. The message starts with ``failed:``."""


@dataclass(frozen=True)
class Target:
    scheme: str
    host: str
    port: int
    path: str
    addresses: tuple[IPAddress, ...]

    @property
    def host_header(self) -> str:
        name = f"[{self.host}]" if ":" in self.host else self.host
        default = 443 if self.scheme == "https" else 80
        return name if self.port == default else f"{name}:{self.port}"


def resolve(host: str, port: int) -> Sequence[tuple[Any, ...]]:
    """The system resolver; tests stand another in (``common.outbound.resolve``)."""
    return socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)


def address_public(address: IPAddress) -> bool:
    """True for an address on the public internet (and not an internal one mapped into IPv6)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or address.sixtofour or (address.teredo[1] if address.teredo else None)
        if inner is not None:
            return address_public(inner)
    return not (
        address.is_loopback
        or address.is_private
        or address.is_link_local
        or address.is_multicast
        or address.is_reserved
        or address.is_unspecified
        or (isinstance(address, ipaddress.IPv4Address) and address in _SHARED)
        or not address.is_global
    )


def _allow_entry(entry: str) -> tuple[str, str]:
    """An allow-list entry as (host or network, port or ""): ``name``, ``name:port``, ``[v6]:port``, a CIDR."""
    entry = entry.strip().lower()
    if entry.startswith("["):
        name, _, rest = entry[1:].partition("]")
        return name, rest.lstrip(":")
    if entry.count(":") == 1:
        name, _, port = entry.partition(":")
        return name, port
    return entry, ""


def _allowed(host: str, port: int, address: IPAddress | None) -> bool:
    """Whether the operator allows this host (or a network holding its address) in ``OUTBOUND_ALLOWED_HOSTS``."""
    for raw in getattr(settings, "OUTBOUND_ALLOWED_HOSTS", ()):
        name, entry_port = _allow_entry(raw)
        if not name or (entry_port and entry_port != str(port)):
            continue
        if "/" in name:
            try:
                if address is not None and address in ipaddress.ip_network(name, strict=False):
                    return True
            except ValueError:
                continue
        elif name == host.lower() or (address is not None and name == str(address)):
            return True
    return False


def target_check(url: str, *, resolve_names: bool = True) -> Target:
    """The URL's target, or ``OutboundRefused`` naming why not. Resolves the host once (unless told not to)."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as error:
        raise OutboundRefused(f"refused: not a URL ({error})") from None
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused("refused: only http and https URLs are sent to")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused("refused: the URL must not carry a user name or password")
    host = (parts.hostname or "").rstrip(".")
    if not host:
        raise OutboundRefused("refused: the URL has no host")
    port = port or (443 if parts.scheme == "https" else 80)
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        literal: IPAddress | None = ipaddress.ip_address(host)
    except ValueError:
        literal = None
    if literal is not None:
        addresses: tuple[IPAddress, ...] = (literal,)
    elif not resolve_names or not settings.OUTBOUND_DELIVERY:
        return Target(parts.scheme, host, port, path, ())
    else:
        try:
            found = resolve(host, port)
        except (OSError, UnicodeError):
            raise OutboundRefused(f"refused: the host name {host!r} does not resolve") from None
        addresses = tuple(dict.fromkeys(ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in found))
        if not addresses:
            raise OutboundRefused(f"refused: the host name {host!r} does not resolve")
    for address in addresses:
        if not address_public(address) and not _allowed(host, port, address):
            raise OutboundRefused(
                f"refused: {host} is (or resolves to) an internal address; "
                "an operator may allow it in OUTBOUND_ALLOWED_HOSTS"
            )
    return Target(parts.scheme, host, port, path, addresses)


def outbound_url_validate(value: str) -> None:
    """A model field's validator (the admin's forms): the rule when a URL is saved."""
    from django.core.exceptions import ValidationError

    if value:
        try:
            target_check(value)
        except OutboundRefused as refused:
            raise ValidationError(str(refused), code="outbound_refused") from None


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """HTTPS to the checked address, the certificate checked against the name."""

    def __init__(self, address: str, port: int, server_name: str, timeout: float) -> None:
        self.tls = ssl.create_default_context()
        super().__init__(address, port, timeout=timeout, context=self.tls)
        self.server_name = server_name

    def connect(self) -> None:
        sock = socket.create_connection((self.host, self.port), self.timeout)
        self.sock = self.tls.wrap_socket(sock, server_hostname=self.server_name)


def send_check(url: str) -> Target:
    """The rule when a request is about to be sent: ``OutboundRefused`` with delivery off, else the URL's target,
    its name resolved now (one that turned internal since the URL was saved is refused). Connect to
    ``addresses[0]`` alone (:func:`pinned_opener`), never to the name."""
    if not settings.OUTBOUND_DELIVERY:
        raise OutboundRefused("refused: outbound delivery is off on this server (OUTBOUND_DELIVERY)")
    return target_check(url)


class _PinnedHandler(urllib.request.AbstractHTTPHandler):
    """urllib's http and https to one checked target: its checked address, whatever DNS answers now."""

    def __init__(self, target: Target) -> None:
        super().__init__()
        self.target = target

    def http_open(self, req: urllib.request.Request) -> Any:
        address, port = self._checked(req)
        return self.do_open(lambda host, timeout=None, **kw: http.client.HTTPConnection(address, port, timeout), req)

    def https_open(self, req: urllib.request.Request) -> Any:
        address, port = self._checked(req)
        name = self.target.host  # the certificate is checked against the name, not the address connected to
        return self.do_open(lambda host, timeout=None, **kw: _PinnedHTTPSConnection(address, port, name, timeout), req)

    # the Host header and the rest of a request's preparation, as urllib's own handlers do it
    http_request = https_request = urllib.request.AbstractHTTPHandler.do_request_

    def _checked(self, req: urllib.request.Request) -> tuple[str, int]:
        parts, target = urlsplit(req.full_url), self.target
        port = parts.port or (443 if parts.scheme == "https" else 80)
        if (parts.scheme, (parts.hostname or "").rstrip("."), port) != (target.scheme, target.host, target.port):
            raise OutboundRefused("refused: not the URL that was checked")
        if not target.addresses:
            raise OutboundRefused("refused: the URL's host was not resolved (outbound delivery is off)")
        return str(target.addresses[0]), port


def pinned_opener(target: Target) -> urllib.request.OpenerDirector:
    """A urllib opener (``common.http.JsonClient``'s ``opener``) for the target :func:`send_check` returned:
    it connects to the checked address alone (https checked against the name), through no proxy, and follows
    no redirect (a 3xx is the answer, an ``HTTPError``); any other URL is refused."""
    opener = urllib.request.OpenerDirector()
    for handler in (
        _PinnedHandler(target), urllib.request.HTTPDefaultErrorHandler(), urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),
    ):  # fmt: skip
        opener.add_handler(handler)
    return opener


def post_json(url: str, body: bytes, *, deadline_s: float, headers: Mapping[str, str] | None = None) -> int:
    """POST ``body`` (JSON) to ``url`` under the rule; the 2xx status, or ``OutboundRefused`` / ``OutboundFailed``."""
    target = send_check(url)
    address = str(target.addresses[0])
    if target.scheme == "https":
        connection: http.client.HTTPConnection = _PinnedHTTPSConnection(address, target.port, target.host, deadline_s)
    else:
        connection = http.client.HTTPConnection(address, target.port, timeout=deadline_s)
    cut = threading.Event()

    def cut_off() -> None:  # the one deadline: whatever the exchange is doing, it ends here
        cut.set()
        if connection.sock is not None:
            with contextlib.suppress(OSError):
                connection.sock.shutdown(socket.SHUT_RDWR)

    timer = threading.Timer(deadline_s, cut_off)
    timer.daemon = True
    timer.start()
    try:
        sent = {"Content-Type": "application/json", "Host": target.host_header, **(headers or {})}
        connection.request("POST", target.path, body=body, headers=sent)
        response = connection.getresponse()
        status = response.status
        read, cap = 0, settings.OUTBOUND_MAX_RESPONSE_BYTES
        while read < cap:
            chunk = response.read(min(_READ_CHUNK, cap - read))
            if not chunk:
                break
            read += len(chunk)
    except (OSError, http.client.HTTPException, ValueError):
        # One text for a closed port, a silent one, a reset and a drip: the error says nothing of the port.
        raise OutboundFailed(f"failed: no complete answer within {deadline_s:g} s") from None
    finally:
        timer.cancel()
        connection.close()
    if cut.is_set():
        raise OutboundFailed(f"failed: no complete answer within {deadline_s:g} s")
    if not 200 <= status < 300:
        raise OutboundFailed(f"failed: the target answered HTTP {status}")
    return status
