"""Block-to-update latency from Kafka timestamps (producers/readers/latency.py): matching by block number, percentiles."""

from __future__ import annotations

import pytest

from producers.readers.latency import LatencySummary, block_times, latencies, percentile, summarize


def test_percentile_interpolates_between_closest_ranks() -> None:
    values = [40.0, 10.0, 30.0, 20.0]  # unsorted on purpose
    assert percentile(values, 0) == 10.0
    assert percentile(values, 100) == 40.0
    assert percentile(values, 50) == 25.0
    assert percentile(values, 99) == pytest.approx(39.7)
    assert percentile([7.0], 99) == 7.0


@pytest.mark.parametrize("values, q", [([], 50), ([1.0], -1), ([1.0], 100.5)])
def test_percentile_refuses_no_values_and_out_of_range(values: list[float], q: float) -> None:
    with pytest.raises(ValueError):
        percentile(values, q)


def test_each_update_is_measured_from_its_own_block() -> None:
    blocks = [(1, 1_000), (2, 2_000), (3, 3_000)]
    updates = [(2, 2_700), (1, 1_400), (3, 4_500), (2, 3_100)]
    assert latencies(blocks, updates) == ([700, 400, 1_500, 1_100], 0)


def test_an_update_of_an_unknown_block_is_counted_apart() -> None:
    assert latencies([(1, 1_000)], [(1, 1_250), (9, 5_000)]) == ([250], 1)


def test_a_block_seen_twice_counts_from_its_first_record() -> None:
    assert block_times([(4, 9_000), (4, 8_000), (5, 9_500)]) == {4: 8_000, 5: 9_500}
    assert latencies([(4, 9_000), (4, 8_000)], [(4, 9_100)]) == ([1_100], 0)


def test_summary_percentiles_over_a_hundred_updates() -> None:
    blocks = [(n, n * 1_000) for n in range(1, 101)]
    updates = [(n, n * 1_000 + n * 10) for n in range(1, 101)]  # block n's update comes 10 n ms later
    summary = summarize(blocks, updates)
    assert summary.count == 100 and summary.unmatched == 0
    assert summary.p50 == pytest.approx(505.0)
    assert summary.p95 == pytest.approx(950.5)
    assert summary.p99 == pytest.approx(990.1)
    assert summary.max == 1_000.0
    assert summary.line() == "p50 505 ms, p95 950 ms, p99 990 ms, max 1000 ms over 100 updates"
    assert summary.to_json()["p99_ms"] == pytest.approx(990.1)


def test_summary_of_nothing_measured() -> None:
    assert summarize([(1, 0)], [(2, 10)]) == LatencySummary(0, 1, 0.0, 0.0, 0.0, 0.0)
    assert summarize([], []).line() == "no updates to measure"
