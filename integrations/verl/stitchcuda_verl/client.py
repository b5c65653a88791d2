"""One candidate through `stitchcuda serve` (docs/serve.md): `POST /v1/score` to the best ready
instance; on 202 poll `GET /v1/requests/{id}` there until the reply is final; on 429 leave that
instance for its Retry-After and try another (or wait); on 503, a lost connection or an instance
that forgot the request, mark it down and send the same request id elsewhere (the id makes a
repeat harmless). A 400/401/409 refusal is final. When no instance is healthy for
`unavailable_wait_s`, or the request's time runs out, the result says so with the service's own
error codes (infrastructure_error, request_timeout).

One ClientSession per event loop and configuration (`client_for`), shared by every call on that
loop: verl's reward managers run all of a worker's calls on one loop.
"""

import asyncio
import logging
import weakref
from typing import Any

import aiohttp

from .config import ServeConfig
from .endpoints import EndpointPool, prefer_local
from .reply import flatten_reply, local_result

logger = logging.getLogger("stitchcuda_verl")

FINAL_STATUSES = frozenset({"done", "error", "timeout", "rejected"})
# Past the request's own timeout, how long the client still waits for the service's final reply
# (the service answers `timeout` itself once the request's time has run out).
DEADLINE_SLACK_S = 60.0


def _retry_after(response: aiohttp.ClientResponse, default: float) -> float:
    try:
        return max(0.0, float(response.headers.get("Retry-After", default)))
    except ValueError:
        return default


async def _json(response: aiohttp.ClientResponse) -> dict[str, Any] | None:
    try:
        body = await response.json(content_type=None)
    except (aiohttp.ClientError, ValueError):
        return None
    return body if isinstance(body, dict) else None


class ServeClient:
    def __init__(self, config: ServeConfig):
        self.config = config
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        # limit=0: the reward manager's max_concurrent bounds the connections, not aiohttp's pool.
        self.session = aiohttp.ClientSession(headers=headers, connector=aiohttp.TCPConnector(limit=0))
        self.pool = EndpointPool(prefer_local(config.urls, config.node_host), self.session, config.health_ttl_s)

    async def close(self) -> None:
        await self.session.close()

    async def score(self, request_id: str, task: str, source: str) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        body = {"request_id": request_id, "task": task, "source": source, "timeout_s": self.config.request_timeout_s}
        deadline = loop.time() + self.config.request_timeout_s + DEADLINE_SLACK_S
        unavailable_since: float | None = None
        while loop.time() < deadline:
            ready, backing_off_s = await self.pool.ready()
            if not ready:
                now = loop.time()
                if backing_off_s is None:  # nothing healthy at all
                    unavailable_since = now if unavailable_since is None else unavailable_since
                    if now - unavailable_since >= self.config.unavailable_wait_s:
                        return self._unavailable(request_id)
                    wait_s = self.pool.seconds_to_next_check()
                else:  # healthy but all answered 429: wait for the first Retry-After to pass
                    unavailable_since = None
                    wait_s = backing_off_s
                await asyncio.sleep(min(max(wait_s, 0.05), max(0.0, deadline - now)))
                continue
            unavailable_since = None
            url = ready[0]
            reply = await self._attempt(url, body, deadline)
            if reply is not None:
                return flatten_reply(reply, url)
        return local_result(request_id, "timeout", "request_timeout",
                            f"no final reply within {self.config.request_timeout_s:g} s (+{DEADLINE_SLACK_S:g} s)")

    def _unavailable(self, request_id: str) -> dict[str, Any]:
        message = (f"no healthy stitchcuda serve endpoint for {self.config.unavailable_wait_s:g} s: "
                   f"{self.pool.describe()}")
        logger.error("stitchcuda reward: %s", message)
        return local_result(request_id, "error", "infrastructure_error", message)

    async def _attempt(self, url: str, body: dict[str, Any], deadline: float) -> dict[str, Any] | None:
        """The final reply from `url`, or None when the request must go again (elsewhere or later)."""
        loop = asyncio.get_running_loop()
        timeout = aiohttp.ClientTimeout(total=max(1.0, deadline - loop.time()), sock_connect=5)
        try:
            async with self.session.post(f"{url}/v1/score", json=body, timeout=timeout) as response:
                status, reply = response.status, await _json(response)
                retry_after = _retry_after(response, default=1.0)
        except asyncio.TimeoutError:
            return await self._poll(url, body["request_id"], deadline)  # accepted, maybe: ask
        except aiohttp.ClientError as error:
            self.pool.mark_down(url, f"POST /v1/score: {type(error).__name__} {error}".strip())
            return None
        if status == 200 and reply is not None:
            return reply
        if status == 202:
            return await self._poll(url, body["request_id"], deadline)
        if status == 429:
            self.pool.back_off(url, retry_after, "429 queue full")
            return None
        if status in (400, 401, 409) and reply is not None:
            if status == 401:
                logger.error("stitchcuda reward: %s refused the token (401): check the token file", url)
            return reply  # refused for good: this candidate, this token or this id will not change
        code = reply.get("error_code") if reply else None
        self.pool.mark_down(url, f"POST /v1/score: HTTP {status} {code or ''}".strip(),
                            for_s=retry_after if status == 503 else None)
        return None

    async def _poll(self, url: str, request_id: str, deadline: float) -> dict[str, Any] | None:
        loop = asyncio.get_running_loop()
        interval = self.config.poll_interval_s
        while loop.time() < deadline:
            await asyncio.sleep(min(interval, max(0.0, deadline - loop.time())))
            interval = min(interval * 1.5, 10 * self.config.poll_interval_s)
            try:
                timeout = aiohttp.ClientTimeout(total=30, sock_connect=5)
                async with self.session.get(f"{url}/v1/requests/{request_id}", timeout=timeout) as response:
                    status, reply = response.status, await _json(response)
            except (aiohttp.ClientError, asyncio.TimeoutError) as error:
                self.pool.mark_down(url, f"GET /v1/requests: {type(error).__name__} {error}".strip())
                return None
            if status == 200 and reply is not None:
                if reply.get("status") in FINAL_STATUSES:
                    return reply
                continue
            if status == 404:  # the instance does not know the request (a new state dir): send it again
                return None
            if status == 401 and reply is not None:
                return reply
            self.pool.mark_down(url, f"GET /v1/requests: HTTP {status}")
            return None
        return None


# One client per (event loop, configuration); the loop's entry goes when the loop does.
_clients: "weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[ServeConfig, ServeClient]]" = (
    weakref.WeakKeyDictionary())


def client_for(config: ServeConfig) -> ServeClient:
    per_loop = _clients.setdefault(asyncio.get_running_loop(), {})
    if config not in per_loop:
        per_loop[config] = ServeClient(config)
    return per_loop[config]


async def close_clients() -> None:
    """Closes this loop's sessions (tests; a trainer's process just exits)."""
    for client in _clients.pop(asyncio.get_running_loop(), {}).values():
        await client.close()
