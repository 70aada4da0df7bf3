"""The scaling bench's pure helpers, and one tiny scale point through its worker (benchmarks/scaling_bench.py)."""

from __future__ import annotations

import hashlib
import math
from dataclasses import asdict
from collections import Counter
from pathlib import Path

import pytest

from benchmarks.scaling_bench import (
    Page,
    Point,
    largest_page,
    make_log,
    run_point,
    state_bytes,
    workload_flags,
)
from benchmarks.render import admission, growth_exponent, growth_word, scaling


def _flag(flags: list[str], name: str) -> str:
    return flags[flags.index(name) + 1]


def test_workload_flags_multiply_publishers_and_subscribers_only() -> None:
    flags = workload_flags(4, 50)
    assert (_flag(flags, "--publishers"), _flag(flags, "--system-publishers"), _flag(flags, "--subscribers")) == (
        "80", "16", "24")
    assert (_flag(flags, "--keys"), _flag(flags, "--subscribed-keys"), _flag(flags, "--blocks")) == ("20", "40", "50")
    assert _flag(flags, "--seed") == "3" and _flag(flags, "--update-rate") == "0.5"


def test_workload_flags_refuse_a_scale_below_one() -> None:
    with pytest.raises(ValueError, match="scale"):
        workload_flags(0, 100)


@pytest.mark.parametrize(("power", "word"), [(0.0, "about constant"), (0.5, "sublinear"), (1.0, "linear"),
                                             (1.5, "superlinear"), (2.0, "quadratic or worse")])
def test_growth_exponent_recovers_a_power_law(power: float, word: str) -> None:
    scales = [1.0, 2.0, 4.0, 8.0]
    costs = [3.0 * s**power for s in scales]
    assert growth_exponent(scales, costs) == pytest.approx(power)
    assert growth_word(growth_exponent(scales, costs)) == word


def test_growth_exponent_needs_two_scales() -> None:
    with pytest.raises(ValueError):
        growth_exponent([2.0], [5.0])
    with pytest.raises(ValueError):
        growth_exponent([2.0, 2.0], [5.0, 6.0])


def test_state_bytes_counts_keys_and_values() -> None:
    assert state_bytes({"a": {b"k1": b"vvv", b"k": b""}, "b": {}}) == 2 + 3 + 1


def test_largest_page_with_one_page_per_namespace_is_the_largest_namespace_encoded() -> None:
    small = {b"a": b"1"}
    large = {b"key-%d" % i: b"x" * i for i in range(10)}
    page = largest_page({"small": small, "large": large}, 1)
    # encode_page: a u32 count, then per entry u32 length + key + u32 length + value.
    expected = 4 + sum(4 + len(k) + 4 + len(v) for k, v in large.items())
    assert page == Page("large", 0, 10, expected)


def test_largest_page_splits_a_namespace_by_the_stable_key_hash() -> None:
    entries = {bytes([i]) * 4: b"v" * (i + 1) for i in range(40)}
    pages: dict[int, dict[bytes, bytes]] = {}
    for key, value in entries.items():
        number = int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "big") % 4
        pages.setdefault(number, {})[key] = value
    sizes = {n: 4 + sum(8 + len(k) + len(v) for k, v in e.items()) for n, e in pages.items()}
    biggest = max(sizes, key=lambda n: sizes[n])
    assert largest_page({"ns": entries}, 4) == Page("ns", biggest, len(pages[biggest]), sizes[biggest])


def _point(scale: int, publishes_per_block: int) -> Point:
    blocks = 10
    return Point(scale=scale, flags=[], blocks=blocks, publishes=publishes_per_block * blocks, cpu_s=scale * 1.0,
                 relay_s=scale * 0.4, subscriber_s=scale * 0.5, encode_s=scale * 0.1, peak_rss_kb=50_000,
                 relay_state_bytes=1000 * scale, subscriber_state_bytes=2000 * scale,
                 largest_page={"namespace": "ns", "entries": 3, "bytes": 100 * scale, "page": 0, "stage": "relay"},
                 relay_namespaces={"ns": 900 * scale}, outputs=100 * scale * blocks,
                 topic_records={"r.events": 60 * scale * blocks, "r.updates": 40 * scale * blocks},
                 topic_bytes={"r.events": 6000 * scale * blocks, "r.updates": 9000 * scale * blocks},
                 views=6 * scale * blocks, view_bytes=30_000 * 6 * scale * blocks, view_max_bytes=35_000)


def test_scaling_table_gives_a_row_per_point_and_how_each_cost_grows() -> None:
    points = [{**asdict(_point(scale, 200 * scale)), "flags": ["--publishers", str(20 * scale), "--subscribers",
                                                              str(6 * scale)]} for scale in (1, 2, 4)]
    text = scaling({"figures": {"points": points}})
    assert "| 4x | 80 | 24 | 8,000 | 2,000 | 40% |" in text  # 8,000 publishes in 4 CPU s; 1.6 of 4.0 s
    assert "CPU per block linear (k = 1.00)" in text
    assert "bytes per view about constant (k = 0.00)" in text


def test_one_scale_point_matches_the_plain_simulator(tmp_path: Path) -> None:
    from producers.readers.log_lines import event_log_lines
    from pubsub_core.simulator import simulate

    log, _ = make_log(1, 2, tmp_path)
    figures = run_point(log, 16)
    with log.open("rb") as source:
        outputs = list(simulate(line for line, _ in event_log_lines(source)))
    # The timed simulator emits what the plain one does, topic by topic and byte for byte.
    assert figures["topic_records"] == dict(Counter(record.topic for record in outputs))
    assert figures["topic_bytes"] == {topic: sum(len(r.to_line().encode()) + 1 for r in outputs if r.topic == topic)
                                      for topic in figures["topic_records"]}
    seals = figures["topic_records"]["polkadot.seals"]
    assert figures["blocks"] == seals and figures["views"] == seals * 6
    assert figures["relay_s"] > 0 and figures["subscriber_s"] > 0 and figures["relay_state_bytes"] > 0
    assert math.isclose(figures["cpu_s"], figures["relay_s"] + figures["subscriber_s"] + figures["encode_s"])


def test_admission_table_gives_shares_of_stage_r() -> None:
    profile = {"stage_r_s": 2.0, "profiled_s": 5.0, "parts_s": {"decode": 0.2, "checks": 0.1},
               "signature_s": 0.05, "barrier_s": 0.01, "calls": {"authenticate": 10, "admit": 9, "verify_ed25519": 10}}
    timing = {"stage_r_s": 1.0, "total_s": 2.5, "parts_s": {"decode": 0.1, "checks": 0.15}, "signature_s": 0.04,
              "barrier_s": 0.0}
    text = admission({"figures": {"profile": profile, "timing": timing}})
    assert "| decode | 0.200 | 10.0% | 0.100 | 10.0% |" in text
    assert "| **all of it** | **0.300** | **15.0%** | **0.250** | **25.0%** |" in text
    assert "(of which ed25519 verification, 10 calls) | 0.050 | 2.5% | 0.040 | 4.0% |" in text


@pytest.mark.pure_python
def test_the_profiled_functions_still_exist() -> None:
    # The admission figures sum these by code object: a rename elsewhere must fail here, not give 0 s.
    from benchmarks.scaling_bench import _admission_functions

    assert all(callable(function) and hasattr(function, "__code__") for function in _admission_functions().values())
