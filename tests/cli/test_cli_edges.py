"""The `pubsub` command at its edges, run as a user runs it (the real entry point in a subprocess): outputs written
whole or not at all and never over an input, one-line errors with conventional exit codes, Ctrl-C, --version,
help, usage errors, progress on a terminal, and bad input lines named by their line number."""

from __future__ import annotations

import os
import pty
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.support.terminal import ctrl_c_reaches_it

from cli.main import COMMAND_MODULES

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
COMMANDS = [name.rpartition(".")[2] for name in COMMAND_MODULES]


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PUBSUB_")}
    return {**env, "PYTHONPATH": str(ROOT), "COLUMNS": "80", **extra}


def pubsub(*args: str, env: dict[str, str] | None = None, stdin: bytes | None = None,
           cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The real command in a subprocess, this checkout's code, stdout and stderr captured (not terminals)."""
    return subprocess.run([sys.executable, "-m", "cli.main", *args], capture_output=True, text=True,
                          env=env or _env(), input=None if stdin is None else stdin.decode(), timeout=120,
                          cwd=cwd or ROOT)


def one_line_error(done: subprocess.CompletedProcess[str], code: int) -> str:
    """The error of a failed run: the exit code, exactly one line on stderr, no traceback, nothing on stdout."""
    assert done.returncode == code, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("pubsub: ")
    return lines[0]


# -- outputs: never over an input, whole or not at all ------------------------------------------------------------

def test_simulate_refuses_to_write_over_its_input(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    log.write_bytes((EXAMPLES / "minimal.jsonl").read_bytes())
    same = tmp_path / "sub" / ".." / "events.jsonl"  # the same file under another name
    (tmp_path / "sub").mkdir()
    for target in (log, same):
        line = one_line_error(pubsub("simulate", str(log), "-o", str(target)), 1)
        assert "is also an input" in line
        assert log.read_bytes() == (EXAMPLES / "minimal.jsonl").read_bytes()
    os.link(log, tmp_path / "hard.jsonl")  # a hard link: same file, different path
    assert "is also an input" in one_line_error(pubsub("simulate", str(log), "-o", str(tmp_path / "hard.jsonl")), 1)
    assert log.read_bytes() == (EXAMPLES / "minimal.jsonl").read_bytes()


@pytest.mark.parametrize("command", ["simulate", "workload"])
def test_an_output_that_cannot_be_written_is_a_one_line_error(command: str, tmp_path: Path) -> None:
    first = [str(EXAMPLES / "minimal.jsonl")] if command == "simulate" else []
    cases = {
        str(tmp_path / "missing" / "out.jsonl"): "does not exist",
        str(tmp_path): "is a folder",
        "/proc/out.jsonl": "/proc",  # a folder nobody can create files in, root included
    }
    for target, says in cases.items():
        line = one_line_error(pubsub(command, *first, "-o", target), 1)
        assert says in line and target in line
    assert list(tmp_path.iterdir()) == []


def test_dash_writes_to_stdout_not_to_a_file_named_dash(tmp_path: Path) -> None:
    done = pubsub("workload", "-o", "-", "--seed", "3", "--blocks", "2", cwd=tmp_path)
    assert done.returncode == 0
    assert not (tmp_path / "-").exists()
    expected = pubsub("workload", "-o", str(tmp_path / "w.jsonl"), "--seed", "3", "--blocks", "2")
    assert expected.returncode == 0
    assert done.stdout == (tmp_path / "w.jsonl").read_text()
    simulated = pubsub("simulate", "-", "-o", "-", "--quiet", stdin=done.stdout.encode(), cwd=tmp_path)
    assert simulated.returncode == 0 and '"polkadot.seals"' in simulated.stdout
    assert not (tmp_path / "-").exists()


def test_dev_null_and_symlinks_stay_what_they_are(tmp_path: Path) -> None:
    """An output that is not a regular file is written, never replaced (``-o /dev/null`` once made /dev/null a
    regular file); a symbolic link keeps pointing at the file, which gets the new content."""
    done = pubsub("simulate", str(EXAMPLES / "minimal.jsonl"), "-o", "/dev/null", "--quiet")
    assert done.returncode == 0
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    target = tmp_path / "real.jsonl"
    target.write_text("old\n")
    (tmp_path / "link.jsonl").symlink_to(target)
    assert pubsub("simulate", str(EXAMPLES / "minimal.jsonl"), "-o", str(tmp_path / "link.jsonl"), "--quiet").returncode == 0
    assert (tmp_path / "link.jsonl").is_symlink()
    assert '"polkadot.seals"' in target.read_text()


def _interrupt_when(process: subprocess.Popen[bytes], ready: Callable[[], bool], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert process.poll() is None, "the command ended before it could be interrupted"
        assert time.monotonic() < deadline, "the command never got going"
        time.sleep(0.05)
    process.send_signal(signal.SIGINT)


def test_ctrl_c_during_workload_exits_130_says_so_and_leaves_the_old_file(tmp_path: Path) -> None:
    out = tmp_path / "events.jsonl"
    out.write_text("the user's old file\n")
    process = subprocess.Popen(
        [sys.executable, "-m", "cli.main", "workload", "-o", str(out), "--blocks", "100000", "--seed", "1"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT, preexec_fn=ctrl_c_reaches_it)
    _interrupt_when(process, lambda: any(p.name.endswith(".partial") and p.stat().st_size > 0
                                         for p in tmp_path.iterdir()))
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr
    err = stderr.decode()
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    assert err.startswith("pubsub: interrupted after ") and "lines; no log written" in err
    assert out.read_text() == "the user's old file\n"
    assert [p.name for p in tmp_path.iterdir()] == ["events.jsonl"]  # no partial file left


def test_ctrl_c_during_simulate_exits_130_and_writes_no_output(tmp_path: Path) -> None:
    log = tmp_path / "events.jsonl"
    assert pubsub("workload", "-o", str(log), "--seed", "5", "--blocks", "400").returncode == 0
    out = tmp_path / "out.jsonl"
    process = subprocess.Popen([sys.executable, "-m", "cli.main", "simulate", "-", "-o", str(out)],
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env(), cwd=ROOT,
                               preexec_fn=ctrl_c_reaches_it)
    assert process.stdin is not None
    half = log.read_bytes().splitlines(keepends=True)
    process.stdin.write(b"".join(half[: len(half) // 2]))
    process.stdin.flush()  # the rest never comes: it is reading stdin when Ctrl-C arrives
    _interrupt_when(process, lambda: any(p.name.endswith(".partial") for p in tmp_path.iterdir()))
    _, stderr = process.communicate(timeout=60)
    assert process.returncode == 130, stderr.decode()[-3000:]
    err = stderr.decode()
    assert "Traceback" not in err and err.startswith("pubsub: interrupted after ") and "input lines" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["events.jsonl"]


# -- errors: one line, conventional codes, --debug --------------------------------------------------------------

def test_a_settings_error_names_the_flag_the_variable_or_the_file(tmp_path: Path) -> None:
    line = one_line_error(pubsub("consume", "--topic-prefix", "a b"), 2)
    assert "(from flag --topic-prefix)" in line
    line = one_line_error(pubsub("consume", "--bootstrap", "nope"), 2)
    assert "(from flag --bootstrap)" in line
    line = one_line_error(pubsub("consume", env=_env(PUBSUB_VIEWS_PARTITIONS="0")), 2)
    assert "(from environment variable PUBSUB_VIEWS_PARTITIONS)" in line
    toml = tmp_path / "pubsub.toml"
    toml.write_text('spark_jit = "fast"\n')
    line = one_line_error(pubsub("consume", "--config", str(toml)), 2)
    assert f"(from file {toml})" in line


def test_sasl_without_a_mechanism_is_a_settings_error_not_a_kafka_traceback() -> None:
    env = _env(PUBSUB_KAFKA_SECURITY_PROTOCOL="SASL_PLAINTEXT", PUBSUB_KAFKA_BOOTSTRAP="127.0.0.1:1")
    line = one_line_error(pubsub("consume", "--topic", "polkadot.updates", env=env), 2)
    assert "PUBSUB_KAFKA_SECURITY_PROTOCOL" in line and "PUBSUB_KAFKA_SASL_MECHANISM" in line


def test_a_kafka_client_error_is_one_line_and_debug_shows_the_traceback(tmp_path: Path) -> None:
    """librdkafka refuses a CA file whose PEM block holds no certificate when it makes the client."""
    ca = tmp_path / "ca.pem"
    ca.write_text("-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n")
    env = _env(PUBSUB_KAFKA_SECURITY_PROTOCOL="SSL", PUBSUB_KAFKA_SSL_CA_FILE=str(ca),
               PUBSUB_KAFKA_BOOTSTRAP="127.0.0.1:1")
    line = one_line_error(pubsub("consume", "--topic", "polkadot.updates", env=env), 1)
    assert "ssl.ca.pem" in line
    debug = pubsub("--debug", "consume", "--topic", "polkadot.updates", env=env)
    assert debug.returncode == 1 and "Traceback" in debug.stderr and "KafkaException" in debug.stderr
    after = pubsub("consume", "--topic", "polkadot.updates", "--debug", env=env)
    assert "Traceback" in after.stderr


def test_debug_shows_the_traceback_and_keeps_the_exit_code() -> None:
    """--debug adds the traceback; a usage or settings error still exits 2, a file error 1, with the same line."""
    for args, code in ((["consume", "--topic-prefix", "a b"], 2), (["simulate", "no-such.jsonl"], 1)):
        plain = one_line_error(pubsub(*args), code)
        for debug in (pubsub("--debug", *args), pubsub(*args, "--debug")):
            assert debug.returncode == code, (args, debug.stderr)
            assert "Traceback" in debug.stderr and debug.stderr.rstrip().splitlines()[-1] == plain


def test_an_input_that_is_missing_or_a_folder_is_a_file_error_that_says_which(tmp_path: Path) -> None:
    """Exit 1 for a file error, as docs/operations.md's table says, for every command that reads an event log."""
    for command in (["simulate"], ["produce", "--bootstrap", "127.0.0.1:1", "--event-log"],
                    ["verify", "--bootstrap", "127.0.0.1:1"]):
        folder = one_line_error(pubsub(*command, str(tmp_path)), 1)
        assert f"{tmp_path} is a folder, not an event log" in folder, command
        missing = one_line_error(pubsub(*command, str(tmp_path / "missing.jsonl")), 1)
        assert f"no event log at {tmp_path / 'missing.jsonl'}: no such file" in missing, command


def test_every_command_and_subcommand_help_has_an_example() -> None:
    import argparse

    from cli.main import build_parser

    def walk(parser: argparse.ArgumentParser, name: str) -> list[tuple[str, argparse.ArgumentParser]]:
        found = [(name, parser)]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for child, sub in action.choices.items():
                    found += walk(sub, f"{name} {child}")
        return found

    helps = walk(build_parser(), "pubsub")
    assert {"pubsub author void", "pubsub topics"} <= {name for name, _ in helps}
    missing = [name for name, parser in helps if "Example" not in parser.format_help()]
    assert not missing, f"no example in the help of: {missing}"


@pytest.mark.parametrize(("env", "named"), [
    ({"PUBSUB_KAFKA_SSL_CA_FILE": "/nonexistent/ca.pem"}, "kafka_ssl_ca_file='/nonexistent/ca.pem' (from environment "
                                                          "variable PUBSUB_KAFKA_SSL_CA_FILE) is invalid: cannot read"),
    ({"PUBSUB_KAFKA_SSL_CERT_FILE": "/nonexistent/c.pem", "PUBSUB_KAFKA_SSL_KEY_FILE": "/nonexistent/k.pem"},
     "kafka_ssl_cert_file='/nonexistent/c.pem' (from environment variable PUBSUB_KAFKA_SSL_CERT_FILE) is invalid"),
    ({"PUBSUB_KAFKA_SSL_CERT_FILE": "/nonexistent/c.pem"}, "kafka_ssl_key_file=None"),
])
def test_a_missing_certificate_file_is_one_line_naming_the_setting(env: dict[str, str], named: str) -> None:
    environ = _env(PUBSUB_KAFKA_SECURITY_PROTOCOL="SASL_SSL", PUBSUB_KAFKA_SASL_MECHANISM="SCRAM-SHA-512",
                   PUBSUB_KAFKA_SASL_USERNAME="job", PUBSUB_KAFKA_SASL_PASSWORD="s3cret-pw",
                   PUBSUB_KAFKA_BOOTSTRAP="127.0.0.1:1", **env)
    result = pubsub("consume", "--topic", "polkadot.updates", env=environ)
    line = one_line_error(result, 2)
    assert named in line and "s3cret-pw" not in result.stderr + result.stdout


def test_a_long_error_stays_one_line_when_stderr_is_not_a_terminal(tmp_path: Path) -> None:
    target = tmp_path / ("a-folder-with-a-long-name-" * 4) / "out.jsonl"
    line = one_line_error(pubsub("workload", "-o", str(target)), 1)
    assert len(line) > 120


def test_a_read_only_command_starts_no_broker_and_says_what_to_run(tmp_path: Path) -> None:
    env = _env(PUBSUB_RUNTIME_DIR=str(tmp_path))
    for args in (["consume", "--topic", "polkadot.updates"], ["export", "-o", str(tmp_path / "e.jsonl")],
                 ["topics", "list"], ["consume", "--follow"]):
        line = one_line_error(pubsub(*args, env=env), 1)
        assert "no Kafka broker is running" in line and "pubsub broker start" in line
    assert not (tmp_path / "kafka").exists()  # nothing started, nothing formatted
    assert not (tmp_path / "e.jsonl").exists()


def test_usage_errors_exit_2_with_the_commands_own_usage() -> None:
    done = pubsub("simulate", str(EXAMPLES / "minimal.jsonl"), "--no-such-flag")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: pubsub simulate ")
    assert "unrecognized arguments: --no-such-flag" in done.stderr
    assert one_line_error(pubsub("workload"), 2).startswith("pubsub: give -o")
    assert "--fresh goes with" in one_line_error(pubsub("broker", "status", "--fresh"), 2)


@pytest.mark.slow
def test_version_and_help() -> None:
    version = pubsub("--version")
    assert version.returncode == 0 and version.stdout.startswith("pubsub 0.")
    top = pubsub("--help").stdout
    assert "exit codes:" in top and "130" in top
    for command in COMMANDS:
        text = pubsub(command, "--help").stdout
        assert text.startswith(f"usage: pubsub {command}")
        assert "Example" in text, command


# -- small things ------------------------------------------------------------------------------------------------

def test_progress_shows_on_a_terminal_stderr_while_stdout_is_redirected(tmp_path: Path) -> None:
    leader, follower = pty.openpty()
    with open(tmp_path / "out.jsonl", "wb") as out:
        process = subprocess.Popen([sys.executable, "-m", "cli.main", "simulate", str(EXAMPLES / "busy.jsonl")],
                                   stdout=out, stderr=follower, env=_env(TERM="xterm"), cwd=ROOT)
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 65536)
            except OSError:  # the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        process.wait(timeout=120)
    os.close(leader)
    assert process.returncode == 0
    assert b"simulating" in shown
    assert b"simulating" not in (tmp_path / "out.jsonl").read_bytes()
    assert (tmp_path / "out.jsonl").read_text().count('"polkadot.seals"') > 0


def test_a_byte_order_mark_on_line_one_is_dropped(tmp_path: Path) -> None:
    log = tmp_path / "bom.jsonl"
    log.write_bytes(b"\xef\xbb\xbf" + (EXAMPLES / "minimal.jsonl").read_bytes())
    with_bom = pubsub("simulate", str(log), "--quiet")
    plain = pubsub("simulate", str(EXAMPLES / "minimal.jsonl"), "--quiet")
    assert with_bom.returncode == plain.returncode == 0
    assert with_bom.stdout == plain.stdout and '"polkadot.updates"' in plain.stdout


def test_workload_refuses_a_realm_that_cannot_name_topics(tmp_path: Path) -> None:
    line = one_line_error(pubsub("workload", "-o", str(tmp_path / "w.jsonl"), "--realm", "bad realm!"), 2)
    assert "'bad realm!'" in line
    assert not (tmp_path / "w.jsonl").exists()


def test_an_unroutable_line_is_named_by_its_line_number_on_its_own_realms_rejected_topic(tmp_path: Path) -> None:
    log = tmp_path / "kusama.jsonl"
    assert pubsub("workload", "-o", str(log), "--realm", "kusama", "--blocks", "2", "--bad-records", "0").returncode == 0
    lines = log.read_text().splitlines()
    lines[3:3] = ['{"topic": "kusama.sideways", "key": "2000", "value": {}}', "", "not json"]
    log.write_text("\n".join(lines) + "\n")
    done = pubsub("simulate", str(log), "--quiet")
    assert done.returncode == 0
    rejected = [line for line in done.stdout.splitlines() if '"id":"ingest/' in line]
    assert len(rejected) == 2
    assert rejected[0].startswith('{"id":"ingest/line-4","key":"2000","topic":"kusama.rejected"')
    assert '"reason":"UnknownTopic"' in rejected[0]
    assert rejected[1].startswith('{"id":"ingest/line-6","key":"","topic":"polkadot.rejected"')  # names no realm


def test_counts_read_as_english(tmp_path: Path) -> None:
    log = tmp_path / "one.jsonl"
    log.write_text((EXAMPLES / "minimal.jsonl").read_text().splitlines()[0] + "\n")
    done = pubsub("simulate", str(log), "-o", str(tmp_path / "out.jsonl"))
    assert done.returncode == 0
    assert "1 input line," in done.stderr and "1 input lines" not in done.stderr


def test_the_topics_help_and_the_operations_table_name_every_output_topic() -> None:
    from pubsub_core.stages.topics import OUTPUTS

    described = " ".join(pubsub("topics", "--help").stdout.split())
    assert f"output topics ({', '.join(OUTPUTS)})" in described
    table = next(line for line in (ROOT / "docs" / "operations.md").read_text().splitlines() if "(outputs)" in line)
    assert all(f"`{name}`" in table for name in OUTPUTS if name != "updates") and "`<realm>.updates`" in table
