"""Hardening of the runner without Docker: bounded buffers, checked task limits, reward files
the verifier must write as numbers, and a Chat Completions client that an endpoint which hangs,
trickles or floods cannot hold or fill (real sockets on 127.0.0.1)."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest
from runner_helpers import write_task

from depthlab.runner import ChatClient, ContainerLimits, HarnessConfig, LLMEndpointError, load_task, read_rewards
from depthlab.runner.buffers import CappedFile, HeadTailBuffer
from depthlab.runner.errors import VerifierOutputParseError


# ---------------------------------------------------------------- bounded buffers ----------
def test_head_tail_buffer_holds_a_fixed_size_and_counts_what_it_dropped():
    buffer = HeadTailBuffer(1000, 1000)
    chunk = bytes(range(256)) * 256  # 64 KiB
    for _ in range(1600):  # 100 MiB
        buffer.write(chunk)
        assert len(buffer) <= 2000
    total = 1600 * len(chunk)
    assert buffer.total == total
    assert buffer.dropped == total - 2000
    rendered, dropped = buffer.take()
    assert rendered.startswith(chunk[:1000])
    assert rendered.endswith(chunk[-1000:])
    assert f"[... {total - 2000} bytes of output dropped ...]".encode() in rendered
    assert dropped == total - 2000
    assert (len(buffer), buffer.dropped, buffer.take()) == (0, 0, (b"", 0))


def test_head_tail_buffer_keeps_everything_that_fits():
    buffer = HeadTailBuffer(4, 4)
    for piece in (b"ab", b"cde", b"fg"):
        buffer.write(piece)
    assert buffer.render() == b"abcdefg"
    assert buffer.dropped == 0


def test_capped_file_streams_the_head_and_keeps_only_the_tail_in_memory(tmp_path):
    path = tmp_path / "out" / "test-stdout.txt"
    sink = CappedFile(path, limit_bytes=10_000, tail_bytes=2_000)
    for index in range(10_000):
        sink.write(f"line {index:05d}\n".encode())
        assert len(sink._tail) <= 2_000
    assert not path.exists()  # written under a temporary name until closed
    sink.close()
    data = path.read_bytes()
    assert data.startswith(b"line 00000\nline 00001\n")
    assert data.endswith(b"line 09999\n")
    assert sink.total == 110_000
    assert sink.dropped == 100_000
    assert b"[... 100000 bytes of output dropped ...]" in data
    assert len(data) < 10_100
    assert [name.name for name in path.parent.iterdir()] == ["test-stdout.txt"]


# ---------------------------------------------------------------- task limits --------------
@pytest.mark.parametrize(
    ("toml", "key", "shown"),
    [
        ("[environment]\nmemory_mb = 0\n", "[environment].memory_mb", "0"),
        ("[environment]\nmemory_mb = -512\n", "[environment].memory_mb", "-512"),
        ("[environment]\nmemory_mb = inf\n", "[environment].memory_mb", "inf"),
        ("[environment]\nmemory_mb = nan\n", "[environment].memory_mb", "nan"),
        ('[environment]\nmemory_mb = "lots"\n', "[environment].memory_mb", "'lots'"),
        ("[environment]\ncpus = 0\n", "[environment].cpus", "0"),
        ("[environment]\ncpus = true\n", "[environment].cpus", "True"),
        ("[environment]\ncpus = inf\n", "[environment].cpus", "inf"),
        ("[agent]\ntimeout_sec = -1\n", "[agent].timeout_sec", "-1"),
        ("[agent]\ntimeout_sec = inf\n", "[agent].timeout_sec", "inf"),
        ("[verifier]\ntimeout_sec = 0\n", "[verifier].timeout_sec", "0"),
        ("[environment]\nbuild_timeout_sec = -5.0\n", "[environment].build_timeout_sec", "-5.0"),
        ('[environment]\nmemory = "0G"\n', "[environment].memory", "'0G'"),
        ('[environment]\nmemory = "many"\n', "[environment].memory", "'many'"),
        ('[environment]\nallow_internet = "yes"\n', "[environment].allow_internet", "'yes'"),
    ],
)
def test_load_task_requires_positive_finite_limits_naming_the_key(tmp_path, toml, key, shown):
    task = write_task(tmp_path, "limits", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text(toml)  # every other field takes Harbor's default
    with pytest.raises(ValueError, match="must be") as raised:
        load_task(task)
    message = str(raised.value)
    assert f"task.toml {key} must be" in message  # one spelling, the runner's checks' and the task model's
    assert str(task) in message
    assert f"got {shown}" in message


def test_load_task_converts_memory_strings_and_keeps_allow_internet_unset(tmp_path):
    task = write_task(tmp_path, "sizes", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text('[environment]\nmemory = "1.5G"\ncpus = 0.5\n')
    spec = load_task(task)
    assert (spec.memory_mb, spec.cpus, spec.allow_internet) == (1536, 0.5, None)
    (task / "task.toml").write_text("[environment]\nallow_internet = true\n")
    assert load_task(task).allow_internet is True


@pytest.mark.parametrize(("size", "megabytes"), [("1.5G", 1536), (" 512m ", 512), ("2049K", 2), ("1.5GiB", None)])
def test_load_task_reads_a_size_as_harbor_does(tmp_path, size, megabytes):
    # Harbor 0.26 (EnvironmentConfig) truncates to whole MB and refuses "GiB"; the runner once rounded up and took it
    task = write_task(tmp_path, "sizes", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text(f'[environment]\nstorage = "{size}"\n')
    if megabytes is None:
        with pytest.raises(ValueError, match=r"\[environment\]\.storage must be a positive size"):
            load_task(task)
    else:
        assert load_task(task).storage_mb == megabytes


def test_network_mode_wins_over_allow_internet_as_in_harbor(tmp_path):
    # Harbor applies the older allow_internet only when network_mode is not set; the runner once let it win
    task = write_task(tmp_path, "both", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text('[environment]\nnetwork_mode = "no-network"\nallow_internet = true\n')
    assert load_task(task).internet is False


@pytest.mark.parametrize(
    ("options", "parameter"),
    [
        ({"cpus": 0, "memory_mb": 256}, "cpus"),
        ({"cpus": float("inf"), "memory_mb": 256}, "cpus"),
        ({"cpus": 1, "memory_mb": 0}, "memory_mb"),
        ({"cpus": 1, "memory_mb": 1.5}, "memory_mb"),
        ({"cpus": 1, "memory_mb": 256, "pids_limit": 0}, "pids_limit"),
        ({"cpus": 1, "memory_mb": 256, "user": "root; rm -rf /"}, "user"),
    ],
)
def test_container_limits_reject_missing_limits(options, parameter):
    with pytest.raises(ValueError, match=f"'{parameter}' parameter of ContainerLimits"):
        ContainerLimits(**options)


# ---------------------------------------------------------------- reward files -------------
@pytest.mark.parametrize("text", ["nan", "inf", "-inf", "1e999", "1_0", "0x1", "1 1", "one"])
def test_reward_txt_must_be_a_plain_finite_number(tmp_path, text):
    (tmp_path / "reward.txt").write_text(text + "\n")
    with pytest.raises(VerifierOutputParseError, match="finite number"):
        read_rewards(tmp_path)


@pytest.mark.parametrize("text", ['{"reward": NaN}', '{"reward": Infinity}', '{"a": 1, "b": -Infinity}'])
def test_reward_json_must_hold_finite_numbers(tmp_path, text):
    (tmp_path / "reward.json").write_text(text)
    with pytest.raises(VerifierOutputParseError, match="finite numbers"):
        read_rewards(tmp_path)


def test_a_huge_reward_file_is_refused_without_reading_it_whole(tmp_path):
    with (tmp_path / "reward.txt").open("wb") as handle:
        handle.write(b"1" + b" " * (3 << 20))
    with pytest.raises(VerifierOutputParseError, match="larger than"):
        read_rewards(tmp_path)


@pytest.mark.parametrize(
    ("value", "reward"), [("1\n", 1.0), ("0.25", 0.25), ("-0", 0.0), ("1e0", 1.0), (".5", 0.5), ("+1.", 1.0)]
)
def test_plain_numbers_are_read(tmp_path, value, reward):
    (tmp_path / "reward.txt").write_text(value)
    assert read_rewards(tmp_path) == {"reward": reward}


# ---------------------------------------------------------------- harness options ----------
def test_harness_config_checks_its_numbers():
    with pytest.raises(ValueError, match="'max_command_sec' parameter of HarnessConfig"):
        HarnessConfig(cap=1, max_command_sec=float("nan"))
    with pytest.raises(ValueError, match="'instruction_limit_bytes' parameter of HarnessConfig"):
        HarnessConfig(cap=1, instruction_limit_bytes=10)
    assert HarnessConfig(cap=1).as_kwargs()["instruction_limit_bytes"] == 65536


@pytest.mark.parametrize(
    ("options", "parameter"),
    [({"timeout": 0}, "timeout"), ({"timeout": float("inf")}, "timeout"), ({"backoff_sec": -1}, "backoff_sec")],
)
def test_chat_client_checks_its_numbers(options, parameter):
    with pytest.raises(ValueError, match=f"'{parameter}' parameter of ChatClient"):
        ChatClient("http://127.0.0.1:9/v1", "m", **options)


# ---------------------------------------------------------------- endpoints that misbehave -
class RawServer:
    """A TCP server on 127.0.0.1 whose connections are handled by ``serve(connection)``."""

    def __init__(self, serve) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}/v1"
        self.connections = 0
        self._serve = serve
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._handle, args=(connection,), daemon=True).start()

    def _handle(self, connection: socket.socket) -> None:
        try:
            connection.recv(1 << 20)
            self._serve(connection)
        except OSError:
            pass
        finally:
            connection.close()

    def close(self) -> None:
        self.listener.close()


def test_an_endpoint_that_never_answers_fails_at_the_request_timeout():
    server = RawServer(lambda connection: time.sleep(30))
    client = ChatClient(server.url, "m", api_key_env=None, timeout=0.5, max_retries=1, backoff_sec=0.01)
    started = time.monotonic()
    with pytest.raises(LLMEndpointError) as raised:
        client.complete([{"role": "user", "content": "hi"}])
    elapsed = time.monotonic() - started
    server.close()
    assert 0.9 <= elapsed < 10.0  # two attempts of 0.5 s, not the 30 s the server would hang
    assert server.connections == 2
    assert "failed after 2 attempt(s) (request timeout 0.5 s)" in str(raised.value)
    assert "no complete answer within the request timeout of 0.5 s" in str(raised.value)


def test_an_endpoint_that_trickles_its_answer_is_cut_at_the_request_timeout():
    def trickle(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n")
        for _ in range(300):  # one byte every 0.1 s: a per-read socket timeout never fires
            connection.sendall(b" ")
            time.sleep(0.1)

    server = RawServer(trickle)
    client = ChatClient(server.url, "m", api_key_env=None, timeout=1.0, max_retries=0)
    started = time.monotonic()
    with pytest.raises(LLMEndpointError, match="request timeout of 1 s"):
        client.complete([{"role": "user", "content": "hi"}])
    assert time.monotonic() - started < 15.0  # the trickle would last 30 s
    server.close()


def test_a_reply_larger_than_the_limit_is_refused(monkeypatch):
    import depthlab.runner.llm as llm

    monkeypatch.setattr(llm, "MAX_REPLY_BYTES", 1000)

    def flood(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5000000\r\n\r\n" + b"x" * 5_000_000)

    server = RawServer(flood)
    client = ChatClient(server.url, "m", api_key_env=None, timeout=5.0, max_retries=0)
    with pytest.raises(LLMEndpointError, match="larger than 1000 bytes"):
        client.complete([{"role": "user", "content": "hi"}])
    server.close()


def test_no_time_left_for_retries_is_an_endpoint_error_not_a_wait(endpoint):
    endpoint.reset(lambda messages, model: (503, "overloaded"))
    client = ChatClient(endpoint.url, "m", api_key_env=None, max_retries=5, backoff_sec=5.0)
    started = time.monotonic()
    with pytest.raises(LLMEndpointError, match="no time left for another attempt"):
        client.complete([{"role": "user", "content": "hi"}], timeout=1.0)
    assert time.monotonic() - started < 4.5  # not the 5 s backoff
    assert len(endpoint.requests) == 1


def test_a_retry_after_date_in_the_past_or_garbage_is_harmless():
    from depthlab.runner.llm import _retry_after

    assert _retry_after("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert _retry_after("soon") is None
    assert _retry_after("inf") is None
    assert _retry_after("1e9") == 600.0


def test_memory_limits_below_dockers_minimum_are_refused(tmp_path: Path):
    task = write_task(tmp_path, "tiny", instruction="x", test_sh="true\n")
    (task / "task.toml").write_text('[environment]\nmemory = "5M"\n')
    with pytest.raises(ValueError, match="at least 6 MB"):
        load_task(task)


# ---------------------------------------------------------------- shell markers ------------
def _bare_shell(buffer_bytes: int = 1 << 20):
    """A Shell's stream parser without a container: markers in, output out."""
    from depthlab.runner.shell import Shell

    shell = object.__new__(Shell)
    shell._nonce = "0123456789ab"
    shell._marker_prefix = b"\n__depthlab_0123456789ab_"
    shell._buffer = HeadTailBuffer(buffer_bytes // 2, buffer_bytes - buffer_bytes // 2)
    shell._carry = b""
    shell._outstanding = {1, 2, 3}
    return shell


@pytest.mark.parametrize("seed", range(40))
def test_markers_are_taken_out_of_the_stream_however_it_is_split(seed):
    import random

    generator = random.Random(seed)
    output = [
        b"hello\n",
        b"\n__depthlab_0123456789ab_x__\n",  # not digits: output
        b"\n__depthlab_ffffffffffff_2__\n",  # another shell's nonce: output
        b"\n__depthlab_0123456789ab_12 is no marker\n",  # digits not closed by "__": output
        "caf\u00e9 \u2603\n".encode(),
    ]
    stream, expected = b"", b""
    for sequence in (1, 2, 3):
        for piece in generator.sample(output, k=3):
            stream += piece
            expected += piece
        stream += f"\n__depthlab_0123456789ab_{sequence}__\n".encode()
    cuts = sorted(generator.sample(range(1, len(stream)), k=generator.randint(1, 30)))
    shell = _bare_shell()
    for start, end in zip([0, *cuts], [*cuts, len(stream)], strict=True):
        shell._absorb(stream[start:end])
    shell._buffer.write(shell._carry)
    assert shell._outstanding == set()
    assert shell._buffer.render() == expected


def test_a_marker_after_a_flood_is_still_found():
    shell = _bare_shell(buffer_bytes=1000)
    for _ in range(500):
        shell._absorb(b"y\n" * 32768)  # 32 MiB through a 1000-byte buffer
    shell._absorb(b"tail\n\n__depthlab_0123456789ab_")
    assert shell._outstanding == {1, 2, 3}
    shell._absorb(b"1__\n")
    assert shell._outstanding == {2, 3}
    rendered, dropped = shell._buffer.take()
    assert rendered.endswith(b"y\ny\ntail\n")
    assert dropped == 500 * 65536 + 5 - 1000


# ---------------------------------------------------------------- command-line checks ------
@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        (["run", "tasks/x", "--model", "m", "--agent-timeout", "0"], "--agent-timeout must be a positive number"),
        (["run", "tasks/x", "--model", "m", "--request-timeout", "inf"], "--request-timeout must be a positive"),
        (["run", "tasks/x", "--model", "m", "--concurrency", "0"], "--concurrency must be at least 1"),
        (["fill", "p.csv", "--tasks", "t", "--models", "m", "--max-retries", "-1"], "--max-retries must be at least 0"),
        (["fill", "p.csv", "--tasks", "t", "--models", "m", "--request-timeout", "-5"], "--request-timeout must be"),
    ],
)
def test_cli_rejects_runner_options_before_running(arguments, expected, capsys):
    from depthlab.cli import main

    assert main(arguments) == 2
    assert expected in capsys.readouterr().err
