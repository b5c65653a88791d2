"""Where compute_score finds the reward service and how long it waits: environment variables,
overridden by keyword arguments (verl passes `reward.custom_reward_function.reward_kwargs` to the
function as keyword arguments, so a recipe can set them in its config instead of the environment).

| kwarg | environment | default |
|---|---|---|
| serve_urls | STITCHCUDA_SERVE_URLS (comma-separated) | http://127.0.0.1:8421 |
| token_file | STITCHCUDA_SERVE_TOKEN_FILE | - (then STITCH_SERVE_TOKEN, the service's own variable; else no token) |
| request_timeout_s | STITCHCUDA_REQUEST_TIMEOUT_S | 1800 (the service's --timeout default) |
| unavailable_wait_s | STITCHCUDA_UNAVAILABLE_WAIT_S | 120 |
| health_ttl_s | STITCHCUDA_HEALTH_TTL_S | 10 |
| poll_interval_s | STITCHCUDA_POLL_INTERVAL_S | 1 |
| run_id | STITCHCUDA_RUN_ID | "" |
| node_host | STITCHCUDA_NODE_HOST | - (an extra name or address of this node) |
"""

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_URL = "http://127.0.0.1:8421"


class ConfigError(ValueError):
    """A setting that cannot work (no URL, an unreadable token file, a non-number)."""


@dataclass(frozen=True)
class ServeConfig:
    urls: tuple[str, ...]
    token: str | None
    request_timeout_s: float = 1800.0
    unavailable_wait_s: float = 120.0
    health_ttl_s: float = 10.0
    poll_interval_s: float = 1.0
    run_id: str = ""
    node_host: str = ""


def _setting(kwargs: Mapping[str, Any], env: Mapping[str, str], key: str, variable: str) -> Any:
    value = kwargs.get(key)
    return value if value not in (None, "") else env.get(variable) or None


def _seconds(kwargs: Mapping[str, Any], env: Mapping[str, str], key: str, variable: str, default: float) -> float:
    value = _setting(kwargs, env, key, variable)
    if value is None:
        return default
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise ConfigError(f"{key} / {variable} must be a number of seconds, not {value!r}") from None
    if seconds <= 0:
        raise ConfigError(f"{key} / {variable} must be positive, not {value!r}")
    return seconds


def _urls(value: Any) -> tuple[str, ...]:
    items = value.split(",") if isinstance(value, str) else list(value)
    urls = tuple(str(item).strip().rstrip("/") for item in items if str(item).strip())
    for url in urls:
        if not url.startswith(("http://", "https://")):
            raise ConfigError(f"serve URL {url!r} must start with http:// or https://")
    if not urls:
        raise ConfigError("no stitchcuda serve URL (STITCHCUDA_SERVE_URLS or serve_urls)")
    return urls


def _token(kwargs: Mapping[str, Any], env: Mapping[str, str]) -> str | None:
    path = _setting(kwargs, env, "token_file", "STITCHCUDA_SERVE_TOKEN_FILE")
    if path is None:
        return env.get("STITCH_SERVE_TOKEN") or None
    try:
        token = Path(path).read_text(encoding="utf-8").strip()
    except OSError as error:
        raise ConfigError(f"cannot read the serve token file {path}: {error.strerror}") from None
    if not token:
        raise ConfigError(f"the serve token file {path} is empty")
    return token


def run_id_of(kwargs: Mapping[str, Any], env: Mapping[str, str] | None = None) -> str:
    """The run id alone: it names requests that never reach the service too."""
    return str(_setting(kwargs, os.environ if env is None else env, "run_id", "STITCHCUDA_RUN_ID") or "")


def resolve_config(kwargs: Mapping[str, Any], env: Mapping[str, str] | None = None) -> ServeConfig:
    env = os.environ if env is None else env
    return ServeConfig(
        urls=_urls(_setting(kwargs, env, "serve_urls", "STITCHCUDA_SERVE_URLS") or DEFAULT_URL),
        token=_token(kwargs, env),
        request_timeout_s=_seconds(kwargs, env, "request_timeout_s", "STITCHCUDA_REQUEST_TIMEOUT_S", 1800.0),
        unavailable_wait_s=_seconds(kwargs, env, "unavailable_wait_s", "STITCHCUDA_UNAVAILABLE_WAIT_S", 120.0),
        health_ttl_s=_seconds(kwargs, env, "health_ttl_s", "STITCHCUDA_HEALTH_TTL_S", 10.0),
        poll_interval_s=_seconds(kwargs, env, "poll_interval_s", "STITCHCUDA_POLL_INTERVAL_S", 1.0),
        run_id=run_id_of(kwargs, env),
        node_host=str(_setting(kwargs, env, "node_host", "STITCHCUDA_NODE_HOST") or ""),
    )
