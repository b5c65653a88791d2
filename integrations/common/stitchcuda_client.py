"""What every trainer integration needs from `stitchcuda serve` (docs/serve.md), standard library only:

- extract_program(reply): the CUDA program in a model's reply (the dataset's prompts ask for one
  ```cuda block), or None;
- request_id_for(task, source, sample): the idempotency key of one sample, stable across retries
  and trainer restarts;
- ServeClient: POST /v1/score with the Bearer token; polls GET /v1/requests/{id} while the reply is
  not final (202); waits Retry-After on 429/503 and backs off on transport errors (the service
  restarting), resending the same id, which the service answers from its store; returns a Score.

A candidate that could not be scored is data (Score with reward 0 and a status saying why), not an
exception: a trainer keeps training. Only a wrong token raises (ServeAuthError): every later call
would fail the same way, and silently training on zeros is worse than stopping.
"""
from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import http.client
import json
import os
import re
import time
import urllib.parse
from typing import Callable

FINAL_STATUSES = frozenset({"done", "error", "timeout"})
# Fence languages taken as the program; an untagged fence counts only when it holds the ABI.
_CUDA_LANGUAGES = frozenset({"cuda", "cu", "cpp", "c++", "cxx", "cc", "c"})
_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+#.-]*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$",
                    re.MULTILINE | re.DOTALL)
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL)
_ABI_ENTRY = "stitch_forward"


def extract_program(reply: str) -> str | None:
    """The program in `reply`: the last closed fenced block tagged cuda/c++ (or untagged) that
    defines stitch_forward, else the last cuda/c++-tagged block, else None. Reasoning inside
    <think>…</think> (or before a lone </think>) is ignored; so is an unclosed fence (a reply cut
    off at the length limit), since a truncated program cannot build."""
    if not isinstance(reply, str):
        return None
    text = _THINK.sub("", reply)
    if "</think>" in text:
        text = text.rsplit("</think>", 1)[1]
    blocks = [(match.group(1).lower(), match.group(2)) for match in _FENCE.finditer(text)]
    with_abi = [body for language, body in blocks
                if (language in _CUDA_LANGUAGES or language == "") and _ABI_ENTRY in body]
    tagged = [body for language, body in blocks if language in _CUDA_LANGUAGES]
    for choice in (with_abi, tagged):
        if choice and choice[-1].strip():
            return choice[-1]
    return None


def request_id_for(task: str, source: str, sample: str, prefix: str = "sc") -> str:
    """An id the service accepts (≤ 200 characters, no '/' or blanks): prefix + a hash of the task,
    the source and the sample's identity (e.g. run, step, index), so resending one sample is
    idempotent and two samples with the same program are still scored apart."""
    digest = hashlib.sha256(json.dumps([task, source, sample]).encode()).hexdigest()[:40]
    safe_prefix = re.sub(r"[^A-Za-z0-9_.-]", "_", prefix)[:60] or "sc"
    return f"{safe_prefix}-{digest}"


def read_token(token: str | None = None, token_file: str | None = None) -> str | None:
    """The bearer token: `token`, else the file's first line, else $STITCH_SERVE_TOKEN."""
    if token:
        return token
    if token_file:
        with open(token_file, encoding="utf-8") as handle:
            return handle.readline().strip()
    return os.environ.get("STITCH_SERVE_TOKEN") or None


@dataclasses.dataclass(frozen=True)
class Score:
    """One candidate's outcome. `status` is the service's (done, error, timeout) or the client's
    own: no_program (nothing to score), client_timeout (no final reply in time), refused (400 or
    409: the service will not score this request)."""
    reward: float
    status: str
    error_code: str = "none"
    message: str = ""
    compiled: bool = False
    correct: bool = False
    hacked: bool = False
    speedup: float | None = None
    request_id: str = ""
    breakdown: dict = dataclasses.field(default_factory=dict)

    @classmethod
    def from_reply(cls, reply: dict) -> "Score":
        speedup = reply.get("speedup")
        return cls(reward=float(reply.get("reward") or 0.0), status=str(reply.get("status", "")),
                   error_code=str(reply.get("error_code", "none")),
                   message=str(reply.get("message", "")), compiled=bool(reply.get("compiled")),
                   correct=bool(reply.get("correct")), hacked=bool(reply.get("hacked")),
                   speedup=float(speedup) if isinstance(speedup, (int, float)) else None,
                   request_id=str(reply.get("request_id", "")),
                   breakdown=reply.get("breakdown") if isinstance(reply.get("breakdown"), dict)
                   else {})

    @classmethod
    def unscored(cls, status: str, error_code: str, message: str, request_id: str = "") -> "Score":
        return cls(reward=0.0, status=status, error_code=error_code, message=message,
                   request_id=request_id)


class ServeAuthError(RuntimeError):
    """The service refused the token (401): a configuration error, not a sample's outcome."""


class ServeClient:
    """A client of one service. Thread-safe: each call opens its own connection. `sleep` and
    `clock` are injectable so tests of the retry logic need not wait."""

    def __init__(self, url: str, token: str | None = None, *, request_timeout_s: float = 1800.0,
                 poll_interval_s: float = 1.0, max_wait_s: float = 60.0,
                 sleep: Callable[[float], None] = time.sleep,
                 clock: Callable[[], float] = time.monotonic):
        parsed = urllib.parse.urlparse(url if "//" in url else "http://" + url)
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"serve URL '{url}': expected http://HOST:PORT")
        self.url = f"{parsed.scheme}://{parsed.netloc}"
        self._https = parsed.scheme == "https"
        self._host = parsed.hostname
        self._port = parsed.port or (443 if self._https else 80)
        self._headers = {"Content-Type": "application/json"}
        if token:
            self._headers["Authorization"] = "Bearer " + token
        self.request_timeout_s = request_timeout_s
        self.poll_interval_s = poll_interval_s
        self.max_wait_s = max_wait_s
        self._sleep = sleep
        self._clock = clock

    def _call(self, method: str, path: str, body: dict | None, timeout: float):
        """(HTTP status, Retry-After seconds or None, JSON body); raises OSError/HTTPException."""
        kind = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        connection = kind(self._host, self._port, timeout=timeout)
        try:
            connection.request(method, path, body=json.dumps(body) if body is not None else None,
                               headers=self._headers)
            response = connection.getresponse()
            data = response.read()
            retry_after = response.getheader("Retry-After")
        finally:
            connection.close()
        try:
            document = json.loads(data) if data else {}
        except ValueError:
            document = {"message": data[:200].decode("utf-8", "replace")}
        try:
            wait = float(retry_after) if retry_after is not None else None
        except ValueError:
            wait = None
        return response.status, wait, document if isinstance(document, dict) else {}

    def score(self, task: str, source: str, request_id: str) -> Score:
        """Blocks until the service's final reply for this candidate, or request_timeout_s."""
        deadline = self._clock() + self.request_timeout_s
        body = {"request_id": request_id, "task": task, "source": source,
                "timeout_s": self.request_timeout_s}
        poll_path = "/v1/requests/" + urllib.parse.quote(request_id, safe="")
        method, path, payload = "POST", "/v1/score", body
        backoff = 0.5
        last_problem = "no reply"
        while True:
            left = deadline - self._clock()
            if left <= 0:
                return Score.unscored("client_timeout", "request_timeout",
                                      f"no final reply in {self.request_timeout_s:g} s "
                                      f"({last_problem})", request_id)
            try:
                status, retry_after, reply = self._call(method, path, payload, timeout=left + 30)
            except (OSError, http.client.HTTPException) as error:
                # The service is restarting or the connection dropped: the id makes a resend safe.
                last_problem = f"transport: {error}"
                self._sleep(min(backoff, max(left, 0)))
                backoff = min(backoff * 2, 10.0)
                method, path, payload = "POST", "/v1/score", body
                continue
            backoff = 0.5
            if status == 401:
                raise ServeAuthError(f"{self.url}: the service refused the token "
                                     f"({reply.get('message', 'unauthorized')})")
            if status in (429, 503):
                last_problem = f"HTTP {status} {reply.get('error_code', '')}".strip()
                wait = retry_after if retry_after is not None else 1.0
                self._sleep(max(0.0, min(wait, self.max_wait_s, left)))
                method, path, payload = "POST", "/v1/score", body
                continue
            if status in (400, 409):
                return Score.unscored("refused", str(reply.get("error_code", f"http_{status}")),
                                      str(reply.get("message", f"HTTP {status}")), request_id)
            if status == 404 and method == "GET":
                # Unknown to the service (its state was reset): submit the candidate again.
                method, path, payload = "POST", "/v1/score", body
                continue
            if status in (200, 202) and reply.get("status") in FINAL_STATUSES:
                return Score.from_reply(reply)
            if status in (200, 202):
                last_problem = f"status {reply.get('status', '?')}"
                self._sleep(min(self.poll_interval_s, left))
                method, path, payload = "GET", poll_path, None
                continue
            last_problem = f"HTTP {status}: {reply.get('message', '')}"
            self._sleep(min(backoff, left))
            backoff = min(backoff * 2, 10.0)

    async def score_async(self, task: str, source: str, request_id: str) -> Score:
        return await asyncio.to_thread(self.score, task, source, request_id)

    def healthy(self, timeout: float = 5.0) -> bool:
        try:
            status, _, reply = self._call("GET", "/healthz", None, timeout=timeout)
        except (OSError, http.client.HTTPException):
            return False
        return status == 200 and reply.get("status") == "ok"


def breakdown_terms(breakdown: dict) -> dict[str, float]:
    """The numeric terms of a reply's breakdown, flat: top-level numbers (rule_reward, shaping;
    the fake scorer's rule) and the rubric's scores as rubric.<dimension>."""
    terms = {key: float(value) for key, value in breakdown.items()
             if isinstance(value, (int, float)) and not isinstance(value, bool)}
    rubric = breakdown.get("rubric")
    scores = rubric.get("scores") if isinstance(rubric, dict) else None
    if isinstance(scores, dict):
        for dimension, one in scores.items():
            if isinstance(one, dict) and isinstance(one.get("score"), (int, float)):
                terms[f"rubric.{dimension}"] = float(one["score"])
    return terms


def summarize(scores: list[Score]) -> dict[str, float]:
    """Batch metrics a trainer logs: rates of each outcome, mean reward, mean speedup of the
    correct ones, and the mean of each numeric breakdown term over the replies that have it."""
    count = max(len(scores), 1)
    metrics: dict[str, float] = {
        "reward_mean": sum(s.reward for s in scores) / count,
        "no_program_rate": sum(s.status == "no_program" for s in scores) / count,
        "compiled_rate": sum(s.compiled for s in scores) / count,
        "correct_rate": sum(s.correct for s in scores) / count,
        "hacked_rate": sum(s.hacked for s in scores) / count,
        "unscored_rate": sum(s.status not in ("done", "no_program") for s in scores) / count,
    }
    speedups = [s.speedup for s in scores if s.correct and s.speedup is not None]
    if speedups:
        metrics["speedup_mean"] = sum(speedups) / len(speedups)
    sums: dict[str, list[float]] = {}
    for score in scores:
        for term, value in breakdown_terms(score.breakdown).items():
            sums.setdefault(term, []).append(value)
    for term, values in sorted(sums.items()):
        metrics[f"breakdown.{term}"] = sum(values) / len(values)
    return metrics
