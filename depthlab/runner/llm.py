"""A small client for any OpenAI-compatible Chat Completions endpoint (stdlib only).

The API key is read from an environment variable when the client is made and kept in memory
only: it is sent in the ``Authorization`` header and never stored in a trial's config, result,
trajectory or log (the config records the variable's *name*), nor passed to a container.
"""

from __future__ import annotations

import email.utils
import json
import os
import random
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from depthlab.runner.errors import LLMEndpointError

#: HTTP statuses that are retried (rate limit, server errors).
RETRY_STATUSES: frozenset[int] = frozenset({408, 409, 429, 500, 502, 503, 504})


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
    api_key_env : str or None, default "DEPTHLAB_API_KEY"
        Name of the environment variable holding the key; None or an unset variable sends no key.
    temperature : float or None, default 0.7
    timeout : float, default 600.0
        Seconds per HTTP request.
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
    depthlab.runner.errors.LLMEndpointError: The endpoint http://127.0.0.1:9/v1 failed after 1 attempt(s): ...
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str | None = "DEPTHLAB_API_KEY",
        temperature: float | None = 0.7,
        timeout: float = 600.0,
        max_retries: int = 4,
        backoff_sec: float = 2.0,
        input_price_per_mtok: float | None = None,
        output_price_per_mtok: float | None = None,
        strip_provider: bool = False,
    ) -> None:
        parsed = urllib.parse.urlparse(base_url)
        if parsed.scheme not in {"http", "https"} or not parsed.netloc:
            raise ValueError(f"The 'base_url' parameter of ChatClient must be an http(s) URL, got {base_url!r}")
        if max_retries < 0:
            raise ValueError(f"The 'max_retries' parameter of ChatClient must be >= 0, got {max_retries!r}")
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
            Overall time budget for this call, retries included (the agent's remaining time).

        Raises
        ------
        LLMEndpointError
            When every attempt failed or the reply has no text.
        """
        model = self.model.split("/", 1)[-1] if self.strip_provider else self.model
        body: dict[str, Any] = {"model": model, "messages": messages}
        if self.temperature is not None:
            body["temperature"] = self.temperature
        payload = json.dumps(body).encode("utf-8")
        budget_end = None if timeout is None else time.monotonic() + timeout
        started = time.monotonic()
        last_error = "no attempt made"
        for attempt in range(1, self.max_retries + 2):
            request_timeout = self.timeout
            if budget_end is not None:
                request_timeout = min(request_timeout, budget_end - time.monotonic())
                if request_timeout <= 0:
                    break
            try:
                data = self._post(payload, request_timeout)
                return self._reply(data, time.monotonic() - started, attempt)
            except _Retryable as error:
                last_error = str(error)
                if attempt > self.max_retries:
                    break
                wait = min(self.backoff_sec * 2 ** (attempt - 1), 60.0) * (0.5 + random.random() / 2)
                wait = max(wait, error.retry_after or 0.0)
                if budget_end is not None and time.monotonic() + wait >= budget_end:
                    break
                time.sleep(wait)
        raise LLMEndpointError(
            f"The endpoint {self.public_base_url} failed after {attempt} attempt(s): {last_error}"
        ) from None

    def _post(self, payload: bytes, timeout: float) -> dict[str, Any]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._api_key:
            headers["Authorization"] = f"Bearer {self._api_key}"
        request = urllib.request.Request(f"{self.base_url}/chat/completions", data=payload, headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=timeout) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            detail = error.read()[:300].decode("utf-8", errors="replace")
            message = f"HTTP {error.code}: {detail}"
            if error.code in RETRY_STATUSES:
                raise _Retryable(message, _retry_after(error.headers.get("Retry-After"))) from None
            raise LLMEndpointError(f"The endpoint {self.public_base_url} refused the request: {message}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as error:
            reason = getattr(error, "reason", error)
            raise _Retryable(f"{type(reason).__name__}: {reason}") from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
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


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return float(value)
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(value)
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _int_or_none(value: object) -> int | None:
    return int(value) if isinstance(value, int | float) else None
