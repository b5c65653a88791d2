"""The health-checked list of `stitchcuda serve` instances a reward worker may call.

The node's own instance comes first (a URL whose host is this machine: a loopback address, the
host name, an address the host name resolves to, or STITCHCUDA_NODE_HOST), the others after it in
the order given, so with one list for the whole cluster every node's reward workers call their own
node's GPUs and fail over to the rest. An instance is asked `GET /healthz` when its last answer is
older than `health_ttl_s`; one that does not answer, answers 503 (draining) or fails a request is
down until its next check. An instance that answered 429 is left alone for its Retry-After.
"""

import asyncio
import ipaddress
import socket
from dataclasses import dataclass
from urllib.parse import urlsplit

import aiohttp


def _addresses(host: str) -> set[str]:
    try:
        return {info[4][0] for info in socket.getaddrinfo(host, None)}
    except (OSError, UnicodeError):
        return set()


def _is_loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def local_names(node_host: str = "") -> tuple[set[str], set[str]]:
    """This machine's names and addresses."""
    names = {socket.gethostname(), socket.getfqdn()} | ({node_host} if node_host else set())
    addresses: set[str] = set()
    for name in names:
        addresses |= _addresses(name)
    return names, addresses


def is_local(url: str, names: set[str], addresses: set[str]) -> bool:
    host = urlsplit(url).hostname or ""
    if _is_loopback(host) or host in names or host in addresses:
        return True
    return bool(_addresses(host) & addresses)


def prefer_local(urls: tuple[str, ...], node_host: str = "") -> list[str]:
    names, addresses = local_names(node_host)
    local = [url for url in urls if is_local(url, names, addresses)]
    return local + [url for url in urls if url not in local]


@dataclass
class _Health:
    healthy: bool = False
    checked_at: float | None = None  # loop time of the last check; None: never checked
    reason: str = "not checked yet"
    not_before: float = 0.0  # loop time before which no request goes there (Retry-After)


class EndpointPool:
    def __init__(self, urls: list[str], session: aiohttp.ClientSession, health_ttl_s: float):
        self.urls = urls
        self._session = session
        self._ttl = health_ttl_s
        self._health = {url: _Health() for url in urls}
        self._locks = {url: asyncio.Lock() for url in urls}

    def _now(self) -> float:
        return asyncio.get_running_loop().time()

    def _stale(self, url: str) -> bool:
        checked_at = self._health[url].checked_at
        return checked_at is None or self._now() - checked_at >= self._ttl

    async def _check(self, url: str) -> None:
        async with self._locks[url]:  # one check at a time per instance, however many callers
            if not self._stale(url):
                return
            health = self._health[url]
            try:
                timeout = aiohttp.ClientTimeout(total=5)
                async with self._session.get(f"{url}/healthz", timeout=timeout) as response:
                    body = await response.json(content_type=None)
                    status = body.get("status") if isinstance(body, dict) else None
                    health.healthy = response.status == 200 and status == "ok"
                    health.reason = "ok" if health.healthy else f"healthz {response.status} {status}"
            except (aiohttp.ClientError, asyncio.TimeoutError, ValueError) as error:
                health.healthy = False
                health.reason = f"healthz: {type(error).__name__} {error}".strip()
            health.checked_at = self._now()

    async def ready(self) -> tuple[list[str], float | None]:
        """The instances to try now, best first; and when none is ready but some are healthy and
        backing off, the seconds until the first of them may be tried again (else None)."""
        stale = [url for url in self.urls if self._stale(url)]
        if stale:
            await asyncio.gather(*(self._check(url) for url in stale))
        now = self._now()
        healthy = [url for url in self.urls if self._health[url].healthy]
        ready = [url for url in healthy if self._health[url].not_before <= now]
        if ready or not healthy:
            return ready, None
        return [], min(self._health[url].not_before for url in healthy) - now

    def seconds_to_next_check(self) -> float:
        now = self._now()
        ages = [now - h.checked_at for h in self._health.values() if h.checked_at is not None]
        return max(0.1, self._ttl - max(ages, default=self._ttl))

    def mark_down(self, url: str, reason: str, for_s: float | None = None) -> None:
        """Down until checked again: after `for_s` (a Retry-After), by default after health_ttl_s."""
        health = self._health[url]
        health.healthy = False
        health.reason = reason
        health.checked_at = self._now() - self._ttl + (self._ttl if for_s is None else for_s)

    def back_off(self, url: str, seconds: float, reason: str) -> None:
        health = self._health[url]
        health.not_before = self._now() + seconds
        health.reason = reason

    def describe(self) -> str:
        return "; ".join(f"{url}: {self._health[url].reason}" for url in self.urls)
