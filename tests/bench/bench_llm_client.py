"""Benchmark: depthlab's stdlib Chat Completions client against the same calls through httpx with tenacity.

Issue 36 asked whether :class:`depthlab.runner.ChatClient`'s hand-written retries and timeouts should be a
well-kept library's. Both clients run in one process against one Chat Completions server on loopback
(a real HTTP server thread), each in its best shape:

* ``stdlib``: ``ChatClient.complete`` as the agent calls it (a new connection per request, the hard
  deadline's watchdog thread, retries on 429/5xx);
* ``httpx``: one ``httpx.Client`` (its connection pool kept alive across requests) with
  ``tenacity.retry`` on the same statuses, and no watchdog (httpx's timeouts are per phase, so it does
  not bound an endpoint that trickles its answer: a like-for-like client would add one);

and three measures: the median time of a request answered at once (best of 5 rounds of 300 requests),
a request that succeeds after two 503s with no backoff wait (the retry machinery itself), and the cost
of importing each client's modules in a fresh interpreter (best of 5, ``-X importtime``'s selves added).
A trickling endpoint (40 bytes of the reply, one each 0.1 s, then silence) is also timed, no retries on either
side: the stdlib client gives up at its request timeout, httpx only when one gap between bytes exceeds its
read timeout, after the whole trickle.

Usage: ``python tests/bench/bench_llm_client.py [--rounds 5] [--requests 300]``.
"""

from __future__ import annotations

import argparse
import contextlib
import http.server
import json
import socket
import statistics
import subprocess
import sys
import threading
import time
from typing import Any

REPLY = json.dumps(
    {
        "choices": [{"message": {"role": "assistant", "content": '{"commands": [], "task_complete": true}'}}],
        "usage": {"prompt_tokens": 120, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 0}},
    }
).encode()


class _State:
    fail_next = 0
    trickle = False


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, so httpx's pool is used as it would be

    def log_message(self, *args: object) -> None:
        pass

    def setup(self) -> None:
        super().setup()
        # headers and body go out in two writes: without this, Nagle's algorithm and the client's
        # delayed ACK hold every kept-alive reply back by 40 ms (a server artefact, not the client's)
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if _State.fail_next:
            _State.fail_next -= 1
            body = b"busy"
            self.send_response(503)
        else:
            body = REPLY
            self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if _State.trickle:
            for byte in body[:40]:
                self.wfile.write(bytes([byte]))
                self.wfile.flush()
                time.sleep(0.1)
            return
        self.wfile.write(body)


def _server() -> tuple[http.server.ThreadingHTTPServer, str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


def _httpx_client(url: str, timeout: float, attempts: int = 5) -> Any:
    import httpx
    import tenacity

    client = httpx.Client(base_url=url, timeout=timeout)

    class Retry(Exception):
        pass

    @tenacity.retry(
        retry=tenacity.retry_if_exception_type((Retry, httpx.TransportError)),
        stop=tenacity.stop_after_attempt(attempts),
        wait=tenacity.wait_none(),
        reraise=True,
    )
    def complete(messages: list[dict[str, str]]) -> dict[str, Any]:
        response = client.post("/chat/completions", json={"model": "m", "messages": messages, "temperature": 0.7})
        if response.status_code in (408, 409, 429) or response.status_code >= 500:
            raise Retry(response.status_code)
        data = response.json()
        usage = data.get("usage") or {}
        return {"content": data["choices"][0]["message"]["content"], "prompt_tokens": usage.get("prompt_tokens")}

    return complete


def _median_request(call: Any, requests: int, rounds: int) -> float:
    messages = [{"role": "user", "content": "hi " * 200}]
    best = float("inf")
    for _ in range(rounds):
        times = []
        for _ in range(requests):
            start = time.perf_counter()
            call(messages)
            times.append(time.perf_counter() - start)
        best = min(best, statistics.median(times))
    return best


def _retried(call: Any, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds * 20):
        _State.fail_next = 2
        start = time.perf_counter()
        call([{"role": "user", "content": "hi"}])
        best = min(best, time.perf_counter() - start)
    return best


def _import_ms(statement: str, rounds: int) -> float:
    best = float("inf")
    for _ in range(rounds):
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-c", statement], capture_output=True, text=True, check=True
        )
        # "import time: self [us] | cumulative | package": the selves add up to the whole import
        lines = [line for line in done.stderr.splitlines()[1:] if line.count("|") == 2]
        total = sum(int(line.split("|")[0].rsplit(":", 1)[1]) for line in lines)
        best = min(best, total / 1000)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args()

    from depthlab.runner.llm import ChatClient

    server, url = _server()
    try:
        stdlib = ChatClient(url, "m", api_key_env=None, max_retries=4, backoff_sec=0.0, timeout=2.0)
        via_httpx = _httpx_client(url, 2.0)
        stdlib.complete([{"role": "user", "content": "warm"}])
        via_httpx([{"role": "user", "content": "warm"}])
        plain = {name: _median_request(call, args.requests, args.rounds) for name, call in
                 (("stdlib", stdlib.complete), ("httpx", via_httpx))}  # fmt: skip
        retried = {name: _retried(call, args.rounds) for name, call in
                   (("stdlib", stdlib.complete), ("httpx", via_httpx))}  # fmt: skip
        _State.trickle = True  # 40 bytes, one each 0.1 s: 4 s in all, longer than both clients' 2 s limit
        trickled = {}
        for name, call in (("stdlib", ChatClient(url, "m", api_key_env=None, max_retries=0, timeout=2.0).complete),
                           ("httpx", _httpx_client(url, 2.0, attempts=1))):  # fmt: skip
            start = time.perf_counter()
            with contextlib.suppress(Exception):  # either client's failure: the time is what is measured
                call([{"role": "user", "content": "hi"}])
            trickled[name] = time.perf_counter() - start
        _State.trickle = False
    finally:
        server.shutdown()
    imports = {
        "stdlib": _import_ms("import http.client, urllib.request, json, threading, email.utils", args.rounds),
        "httpx": _import_ms("import httpx, tenacity", args.rounds),
    }
    print(f"request answered at once, median: stdlib {plain['stdlib'] * 1e3:.3f} ms, "
          f"httpx {plain['httpx'] * 1e3:.3f} ms"
          f" (httpx / stdlib = {plain['httpx'] / plain['stdlib']:.2f})")  # fmt: skip
    print(f"after two 503s, best: stdlib {retried['stdlib'] * 1e3:.3f} ms, httpx {retried['httpx'] * 1e3:.3f} ms"
          f" (httpx / stdlib = {retried['httpx'] / retried['stdlib']:.2f})")  # fmt: skip
    print(
        f"a 4 s trickle under a 2 s limit: stdlib gave up after {trickled['stdlib']:.2f} s, "
        f"httpx after {trickled['httpx']:.2f} s"
    )
    print(
        f"import, best of {args.rounds}: the stdlib client's modules {imports['stdlib']:.1f} ms, "
        f"httpx + tenacity {imports['httpx']:.1f} ms"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
