"""A small client for any OpenAI-compatible Chat Completions endpoint (stdlib only).

The API key is read from an environment variable when the client is made and kept in memory
only: it is sent in the ``Authorization`` header and never stored in a trial's config, result,
trajectory or log (the config records the variable's *name*), nor passed to a container.

Every request has a hard deadline, ``timeout`` (``--request-timeout``): a watchdog closes the
connection when it passes, so an endpoint that accepts and never answers, or trickles its
answer byte by byte, fails the attempt; it is retried like a 5xx. A reply larger than
:data:`MAX_REPLY_BYTES` is refused. When every attempt failed, :class:`LLMEndpointError` names
the request timeout and the attempts: the trial is then invalid (an outage, not the model's
failure).

Why the standard library and not ``httpx`` with ``tenacity`` (or the ``openai`` SDK, built on httpx):
measured in one process against one loopback endpoint (``tests/bench/bench_llm_client.py``), a
request answered at once takes the same time (httpx / stdlib 1.02; after two 503s, 0.93), so there
is no speed to gain, while the one behaviour the runner most needs is the one httpx does not have:
its timeouts bound each phase, not the request, and an endpoint trickling its answer kept it 5.96 s
under a 2 s timeout where this client gave up at 2.01 s. A library client would need the same
watchdog, plus two dependencies (their import 924 ms against 347 ms for these modules, on this
shared machine). The retry loop left to write by hand is the dozen lines of :meth:`ChatClient.complete`.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import json
import math
import os
import random
import socket
import threading
import time
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from depthlab._checks import check_int_at_least, check_number, check_pattern, check_positive_finite
from depthlab._defaults import DEFAULT_API_KEY_ENV
from depthlab.runner.errors import LLMEndpointError

#: HTTP statuses that are retried (rate limit, server errors).
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504})
#: Largest reply body read (a lying endpoint cannot fill the runner's memory).
MAX_REPLY_BYTES = 16 << 20


@dataclass(frozen=True)
class ChatReply:
    """One completion: the text and its accounting.

    ``prompt_tokens`` includes cached tokens (the ATIF convention); ``cost_usd`` is the endpoint's
    own ``usage.cost`` when it reports one, else computed from the client's prices, else None.
    """

    content: str
    prompt_tokens: int | None
    completion_tokens: int | None
    cached_tokens: int | None
    cost_usd: float | None
    seconds: float
    attempts: int


class ChatClient:
    """Chat Completions client with retries and per-call accounting.

    Parameters
    ----------
    base_url : str
        Endpoint root, e.g. ``"http://127.0.0.1:8000/v1"``; ``/chat/completions`` is appended.
    model : str
        The model name sent to the endpoint. A ``provider/`` prefix recorded for Harbor (e.g.
        ``"openai/gpt-5"``) is stripped before sending when ``strip_provider`` is True.
    api_key_env : str or None, default :data:`depthlab._defaults.DEFAULT_API_KEY_ENV` (``OPENAI_API_KEY``)
        Name of the environment variable holding the key; None or an unset variable sends no key.
    temperature : float or None, default 0.7
    timeout : float, default 600.0
        Hard limit in seconds on each HTTP request, connection to last byte.
    max_retries : int, default 4
        Retries after the first attempt on 429, 5xx, connection errors and timeouts.
    backoff_sec : float, default 2.0
        First wait; it doubles per retry (with jitter), capped at 60 s; ``Retry-After`` wins when larger.
    input_price_per_mtok, output_price_per_mtok : float or None
        USD per million prompt / completion tokens, for the cost when the endpoint reports none.
    strip_provider : bool, default False

    Examples
    --------
    >>> client = ChatClient("http://127.0.0.1:9/v1", "m", api_key_env=None, max_retries=0, timeout=1)
    >>> client.complete([{"role": "user", "content": "hi"}])
    Traceback (most recent call last):
    ...
    depthlab.runner.errors.LLMEndpointError: The endpoint http://127.0.0.1:9/v1 failed after 1 attempt(s) ...
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = DEFAULT_API_KEY_ENV,
        temperature: float | None = 0.7,
        timeout: float = 600.0,
        max_retries: int = 4,
        backoff_sec: float = 2.0,
        input_price_per_mtok: float | None = None,
        output_price_per_mtok: float | None = None,
        strip_provider: bool = False,
    ) -> None:
        check_pattern(base_url, "base_url", "ChatClient", r"https?://[^/\s]+(/\S*)?", "an http(s) URL")
        check_int_at_least(max_retries, "max_retries", "ChatClient", 0)
        check_positive_finite(timeout, "timeout", "ChatClient")
        check_number(backoff_sec, "backoff_sec", "ChatClient", low=0, high=math.inf, high_open=True)
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self._api_key = os.environ.get(api_key_env) if api_key_env else None
        self.temperature = temperature
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_sec = backoff_sec
        self.input_price_per_mtok = input_price_per_mtok
        self.output_price_per_mtok = output_price_per_mtok
        self.strip_provider = strip_provider

    def __repr__(self) -> str:  # never show the key
        return f"ChatClient(base_url={self.public_base_url!r}, model={self.model!r}, api_key_env={self.api_key_env!r})"

    @property
    def public_base_url(self) -> str:
        """The base URL without user info or query string (safe to record)."""
        parsed = urllib.parse.urlparse(self.base_url)
        netloc = parsed.hostname or ""
        if parsed.port:
            netloc += f":{parsed.port}"
        return urllib.parse.urlunparse((parsed.scheme, netloc, parsed.path, "", "", ""))

    def describe(self) -> dict[str, Any]:
        """The client's settings as recorded with every trial (no secret)."""
        return {
            "base_url": self.public_base_url,
            "api_key_env": self.api_key_env,
            "temperature": self.temperature,
            "request_timeout_sec": self.timeout,
            "max_retries": self.max_retries,
            "input_price_per_mtok": self.input_price_per_mtok,
            "output_price_per_mtok": self.output_price_per_mtok,
        }

    def complete(self, messages: list[dict[str, str]], *, timeout: float | None = None) -> ChatReply:
        """Send ``messages``; return the first choice's text with token and cost accounting.

        Parameters
        ----------
        messages : list of dict
            Chat messages (``role``, ``content``).
        timeout : float, optional
            Time within which attempts may start, retry waits included (the agent's remaining
            time). An attempt that started gets the whole request timeout, so that a model still
            answering is told apart from an endpoint that does not answer at all.

        Raises
        ------
        LLMEndpointError
            When every attempt failed, the time for retries ran out, or the reply has no text.
        """
        model = self.model.split("/", 1)[-1] if self.strip_provider else self.model
        body: dict[str, Any] = {"model": model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        payload = json.dumps(body).encode("utf-8")
        budget_end = None if timeout is None else time.monotonic() + timeout
        started = time.monotonic()
        last_error = "no attempt made: no time was left"
        attempt = 0
        for attempt in range(1, self.max_retries + 2):
            if budget_end is not None and time.monotonic() >= budget_end:
                attempt -= 1
                break
            try:
                data = self._post(payload)
                return self._reply(data, time.monotonic() - started, attempt)
            except _Retryable as error:
                last_error = str(error)
                if attempt > self.max_retries:
                    break
                wait = min(self.backoff_sec * 2 ** (attempt - 1), 60.0) * (0.5 + random.random() / 2)
                wait = max(wait, error.retry_after or 0.0)
                if budget_end is not None and time.monotonic() + wait >= budget_end:
                    last_error += " (no time left for another attempt)"
                    break
                time.sleep(wait)
        raise LLMEndpointError(
            f"The endpoint {self.public_base_url} failed after {attempt} attempt(s) "
            f"(request timeout {self.timeout:g} s): {last_error}"
        ) from None

    def _post(self, payload: bytes) -> dict[str, Any]:
        """One request under the hard deadline ``self.timeout``; errors worth a retry raise _Retryable."""
        url = urllib.parse.urlparse(f"{self.base_url}/chat/completions")
        host = url.netloc.rpartition("@")[2]  # never user info in a header
        headers = {"Content-Type": "application/json", "Accept": "application/json", "Host": host}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        connection, target = _connection(url, self.timeout)
        expired = threading.Event()

        def expire() -> None:  # closing the socket ends any blocked read at once
            expired.set()
            sock = connection.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        watchdog = threading.Timer(self.timeout, expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            connection.request("POST", target, body=payload, headers=headers)
            response = connection.getresponse()
            raw = response.read(MAX_REPLY_BYTES + 1)
            status, retry_after = response.status, response.getheader("Retry-After")
        except (OSError, http.client.HTTPException) as error:
            if isinstance(error, TimeoutError):  # the socket's own timeout (the same limit) beat the watchdog
                expired.set()
            if not expired.is_set():
                raise _Retryable(f"{type(error).__name__}: {error}") from None
        finally:
            watchdog.cancel()
            connection.close()
        if expired.is_set():  # a read cut by the watchdog may return part of the body without an error
            raise _Retryable(f"no complete answer within the request timeout of {self.timeout:g} s")
        if len(raw) > MAX_REPLY_BYTES:
            raise _Retryable(f"the reply is larger than {MAX_REPLY_BYTES} bytes")
        if status != 200:
            message = f"HTTP {status}: {raw[:300].decode('utf-8', errors='replace')}"
            if status in RETRY_STATUSES or status >= 500:
                raise _Retryable(message, _retry_after(retry_after))
            raise LLMEndpointError(f"The endpoint {self.public_base_url} refused the request: {message}")
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError, RecursionError):
            raise _Retryable(f"the reply is not JSON: {raw[:200]!r}") from None
        if not isinstance(data, dict):
            raise _Retryable(f"the reply is not a JSON object: {raw[:200]!r}")
        return data

    def _reply(self, data: dict[str, Any], seconds: float, attempts: int) -> ChatReply:
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise LLMEndpointError(f"The endpoint's reply has no choices[0].message.content: {data!r:.300}") from None
        usage = data.get("usage") or {}
        prompt = _int_or_none(usage.get("prompt_tokens"))
        completion = _int_or_none(usage.get("completion_tokens"))
        cached = _int_or_none((usage.get("prompt_tokens_details") or {}).get("cached_tokens"))
        cost = usage.get("cost")
        if cost is None and self.input_price_per_mtok is not None and self.output_price_per_mtok is not None:
            cost = ((prompt or 0) * self.input_price_per_mtok + (completion or 0) * self.output_price_per_mtok) / 1e6
        return ChatReply(
            content=str(content or ""),
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=cached,
            cost_usd=None if cost is None else float(cost),
            seconds=seconds,
            attempts=attempts,
        )


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _connection(url: urllib.parse.ParseResult, timeout: float) -> tuple[http.client.HTTPConnection, str]:
    """A connection for ``url`` (through the environment's proxy, as urllib would) and the request target."""
    secure = url.scheme == "https"
    port = url.port or (443 if secure else 80)
    host = url.hostname or ""
    target = url.path + (f"?{url.query}" if url.query else "")
    proxy = urllib.request.getproxies().get(url.scheme)
    if proxy and not urllib.request.proxy_bypass(host):
        proxy_url = urllib.parse.urlparse(proxy if "://" in proxy else f"http://{proxy}")
        proxy_host, proxy_port = proxy_url.hostname or "", proxy_url.port or 80
        if secure:
            connection: http.client.HTTPConnection = http.client.HTTPSConnection(
                proxy_host, proxy_port, timeout=timeout
            )
            connection.set_tunnel(host, port)
            return connection, target
        return http.client.HTTPConnection(proxy_host, proxy_port, timeout=timeout), url.geturl()
    cls = http.client.HTTPSConnection if secure else http.client.HTTPConnection
    return cls(host, port, timeout=timeout), target


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            parsed = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = parsed.timestamp() - time.time()
    return min(max(0.0, seconds), 600.0) if math.isfinite(seconds) else None


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
