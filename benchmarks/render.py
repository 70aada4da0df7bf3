"""Render benchmarks/results/*.json into the tables of docs/benchmarks.md.

    python -m benchmarks.render            # rewrite every marked section whose result exists
    python -m benchmarks.render --print    # print the tables instead
    python -m benchmarks.render trie       # one result

Each table stands between ``<!-- BEGIN name -->`` and ``<!-- END name -->`` in the doc, headed by the command,
commit, machine and date of the run that produced it; the prose around the markers says what the figures mean.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from benchmarks.common import DOC, RESULTS_DIR, markdown_table, read_result, update_section


def provenance(record: Mapping[str, Any]) -> str:
    """One line: what produced the figures below it, where and when."""
    m = record.get("machine", {})
    memory = f", {m['memory_gib']:g} GiB" if m.get("memory_gib") else ""
    line = (f"Produced by `{record['command']}` at commit `{record['commit']}` on {record['date']}, "
            f"{m.get('cores', '?')} cores ({m.get('cpu', 'unknown CPU')}{memory}), Python {m.get('python', '?')}"
            + (f", the protocol's {record['build']} build." if record.get("build") else "."))
    if record.get("source"):
        line += f" {record['source']}"
    return line


def _spread(values: Sequence[float], unit: str = "") -> str:
    """Median, and the range when there is more than one value."""
    middle = f"{statistics.median(values):.2f}{unit}"
    return middle if len(values) == 1 else f"{middle} ({min(values):.2f}-{max(values):.2f})"


def _jit(pairs: Sequence[Mapping[str, Any]]) -> str:
    """The JVM's JIT compile seconds per pair (available-now and live runs together), or a dash if not recorded."""
    seconds = [r["job_jit_seconds"] + r["live_jit_seconds"] for r in pairs
               if r.get("job_jit_seconds") is not None and r.get("live_jit_seconds") is not None]
    return _spread(seconds) if seconds else "-"


def runs_table(figures: Mapping[str, Any]) -> str:
    """The pipeline's runs: per log the job available-now and live, each beside its own simulator run.

    Ratios are the simulator's seconds over the job's, taken per pair; warm-up pairs get a row of their own.
    """
    rows = []
    for name, log in figures["logs"].items():
        for label, pairs in ((f"{name}, warm-up", log.get("warmup_runs")), (name, log.get("runs"))):
            if not pairs:
                continue
            sims = [r["simulator_seconds"] for r in pairs] + [r["live_simulator_seconds"] for r in pairs]
            ok = all(r["job_ok"] and r["live_ok"] for r in pairs)
            rows.append([
                label, len(pairs), _spread(sims), _spread([r["job_seconds"] for r in pairs]),
                _spread([r["simulator_seconds"] / r["job_seconds"] for r in pairs], "x"),
                _spread([r["live_seconds"] for r in pairs]),
                _spread([r["live_simulator_seconds"] / r["live_seconds"] for r in pairs], "x"),
                _jit(pairs), "yes" if ok else "**NO**"])
    if not rows:
        return ""
    warmup = figures.get("warmup", 0)
    note = (f"Median (range) over {figures.get('runs', 1)} runs per log"
            + (f", after {warmup} warm-up {'pair' if warmup == 1 else 'pairs'} on the same JVM" if warmup else "")
            + ".")
    header = ["log", "runs", "simulator (s)", "job available-now (s)", "available-now / simulator",
              "live end to end (s)", "live / simulator", "JIT (s)", "outputs = simulator"]
    return note + "\n\n" + markdown_table(header, rows, "lrrrrrrrl")


def pipeline(record: Mapping[str, Any]) -> str:
    figures = record["figures"]
    parts = [runs_table(figures)]
    warm = figures.get("startup", {}).get("warm_run")
    if warm:
        parts.append(f"Fixed cost of an available-now run on a warm JVM (the 7-line examples/minimal.jsonl): "
                     f"{warm['wall_seconds']:.1f} s.")
    seam = [[name, f"{log['seam']['all']['views']:,}", f"{log['seam']['all']['mean']:,.0f}",
             f"{log['seam']['all']['p95']:,.0f}", f"{log['seam']['all']['max']:,.0f}"]
            for name, log in figures["logs"].items() if log.get("seam", {}).get("all")]
    if seam:
        parts.append("Bytes per `relay-views` record (one per subscriber per block):\n\n"
                     + markdown_table(["log", "views", "mean bytes", "p95", "max"], seam))
    return "\n\n".join(parts)


def metering(record: Mapping[str, Any]) -> str:
    figures = record["figures"]
    s = figures["summary"]
    main = markdown_table(["per block (mean)", "bytes", "vs. without cache", "vs. lower bound"], [
        ["relay proof, with cache (what `collate` sends)", f"{s['with_cache']:,.0f}",
         f"{1 - s['saving_vs_no_cache']:.1%}", f"{s['ratio_to_lower_bound']:.2f}x"],
        ["with cache, whole PoV share (proof + cache + key-state reads)", f"{s['with_cache_pov']:,.0f}",
         f"{1 - s['pov_saving_vs_no_cache']:.1%}", f"{s['pov_ratio_to_lower_bound']:.2f}x"],
        ["relay proof, without cache (full paths every block)", f"{s['without_cache']:,.0f}", "100%",
         f"{s['without_cache'] / s['lower_bound']:.2f}x"],
        ["lower bound (nodes that changed on subscribed paths)", f"{s['lower_bound']:,.0f}",
         f"{s['lower_bound'] / s['without_cache']:.1%}", "1.00x"],
    ])
    keys = figures["workload"]["keys_per_publisher"]
    sweep = markdown_table(
        ["keys updated per block", "per publisher", "with cache", "without cache", "lower bound", "saving",
         "with / lower bound"],
        [[f"{r['updated_per_block']:.1%}", f"{int(keys * r['updated_per_block']):,}", f"{r['with_cache']:,.0f}",
          f"{r['without_cache']:,.0f}", f"{r['lower_bound']:,.0f}", f"{r['saving_vs_no_cache']:.1%}",
          f"{r['ratio_to_lower_bound']:.2f}x"] for r in figures["sweep"]])
    return main + "\n\nThe same workload at other update rates:\n\n" + sweep


def seam(record: Mapping[str, Any]) -> str:
    m = record["figures"]["summary"]
    rows = [[label, f"{m['full_' + key] * scale:,.{digits}f}", f"{m['delta_' + key] * scale:,.{digits}f}",
             f"{m['delta_' + key] / m['full_' + key]:.1%}"]
            for label, key, scale, digits in (("proof nodes", "nodes", 1, 0), ("raw proof-node bytes", "bytes", 1, 0),
                                              ("record bytes", "record", 1, 0),
                                              ("Stage S step, CPU ms", "step_cpu", 1e3, 1))]
    return (markdown_table(["per subscriber per block (mean)", "full view", "delta view", "delta / full"], rows)
            + f"\n\nChanged nodes on the subscriber's paths: {m['changed_bytes']:,.0f} bytes per block; the delta view "
            f"carries {m['delta_bytes'] / m['changed_bytes']:.2f}x that.")


def trie(record: Mapping[str, Any]) -> str:
    results = record["figures"]
    ops = markdown_table(
        ["entries", "operation", "ours (us)", "py-trie (us)", "py-trie / ours"],
        [[f"{r['size']:,}", op, f"{r['ours'][op + '_us']:.1f}", f"{r['pytrie'][op + '_us']:.1f}",
          f"{r['pytrie'][op + '_us'] / r['ours'][op + '_us']:.1f}x" if r["ours"][op + "_us"] else "-"]
         for r in results for op in ("build", "update", "prove", "verify")], "rlrrr")
    memory = markdown_table(
        ["entries", "build peak, ours (MiB)", "build peak, py-trie (MiB)", "mean proof, ours (bytes)"],
        [[f"{r['size']:,}", f"{r['ours']['build_peak_mb']:.0f}", f"{r['pytrie']['build_peak_mb']:.0f}",
          f"{r['ours']['proof_bytes']:.0f}"] for r in results])
    store = markdown_table(
        ["entries", "keys per block", "backend reads", "backend writes", "KiB read", "KiB written", "us per key"],
        [[f"{r['size']:,}", f"{max(1, r['size'] // 100):,}", f"{r['store']['read_calls']:.1f}",
          f"{r['store']['write_calls']:.1f}", f"{r['store']['kib_read']:,.0f}", f"{r['store']['kib_written']:,.0f}",
          f"{r['store']['update_us']:.1f}"] for r in results])
    return "\n\n".join([ops, memory, "Over the paged state store, per update block:\n\n" + store])


def mapstate(record: Mapping[str, Any]) -> str:
    fits = record["figures"]["fits"]
    rows = [[name, f"{statistics.median(f['fixed_seconds'] for f in runs) * 1e3:.2f}",
             f"{statistics.median(f['bytes_per_second'] for f in runs) / 1e6:.0f}", len(runs)]
            for name, runs in (("read (getValue)", fits["get"]), ("write (updateValue)", fits["update"]))]
    return markdown_table(["MapState call", "fixed cost (ms)", "MB/s beyond it", "runs (median taken)"], rows)


def growth_exponent(scales: Sequence[float], costs: Sequence[float]) -> float:
    """The exponent k of cost ~ scale^k: least-squares slope of log(cost) on log(scale) over the positive points."""
    points = [(math.log(s), math.log(c)) for s, c in zip(scales, costs, strict=True) if s > 0 and c > 0]
    if len(points) < 2:
        raise ValueError("a growth exponent needs two points with positive scale and cost")
    mean_x = sum(x for x, _ in points) / len(points)
    mean_y = sum(y for _, y in points) / len(points)
    spread = sum((x - mean_x) ** 2 for x, _ in points)
    if spread == 0:
        raise ValueError("a growth exponent needs two different scales")
    return sum((x - mean_x) * (y - mean_y) for x, y in points) / spread


def growth_word(exponent: float) -> str:
    """How a cost grows, in words: constant (k < 0.25), sublinear, linear (0.85..1.15), superlinear, quadratic+."""
    if exponent < 0.25:
        return "about constant"
    if exponent < 0.85:
        return "sublinear"
    if exponent <= 1.15:
        return "linear"
    if exponent < 1.85:
        return "superlinear"
    return "quadratic or worse"


def scaling(record: Mapping[str, Any]) -> str:
    rows = []
    for p in record["figures"]["points"]:
        flags = p["flags"]
        cpu = p["relay_s"] + p["subscriber_s"] + p["encode_s"]
        rows.append([f"{p['scale']}x", flags[flags.index("--publishers") + 1],
                     flags[flags.index("--subscribers") + 1], f"{p['publishes']:,}",
                     f"{p['publishes'] / p['cpu_s']:,.0f}", f"{p['relay_s'] / cpu:.0%}",
                     f"{p['relay_state_bytes'] / 1e6:.1f}", f"{p['subscriber_state_bytes'] / 1e6:.1f}",
                     f"{p['peak_rss_kb'] / 1024:.0f}", f"{p['view_bytes'] / p['views'] / 1e3:.1f}"])
    table = markdown_table(["scale", "publishers", "subscribers", "publishes", "publishes per CPU s",
                            "Stage R share", "relay state (MB)", "subscriber states (MB)", "peak RSS (MiB)",
                            "kB per view"], rows)
    points = record["figures"]["points"]
    if len(points) < 2:
        return table
    scales = [p["scale"] for p in points]
    growth = []
    for label, costs in (("CPU per block", [p["cpu_s"] / p["blocks"] for p in points]),
                         ("state held", [p["relay_state_bytes"] + p["subscriber_state_bytes"] for p in points]),
                         ("bytes per view", [p["view_bytes"] / p["views"] for p in points])):
        k = growth_exponent(scales, costs)
        growth.append(f"{label} {growth_word(k)} (k = {k:.2f})")
    return table + ("\n\nAs cost ~ scale^k, least squares over every point: " + "; ".join(growth) + ".")


def simulator(record: Mapping[str, Any]) -> str:
    figures = record["figures"]
    rows = [[name, f"`{t['commit'][:10]}`", t["build"], f"{t['best_seconds']:.2f}", f"{t['publishes_per_s']:,.0f}",
             f"`{t['digest'][:12]}`"] for name, t in figures["trees"].items()]
    table = markdown_table(["tree", "commit", "build", "best CPU (s)", "publishes per CPU s", "output digest"], rows,
                           "lllrrl")
    trees = figures["trees"]
    if "speedup" in figures and "baseline" in trees:
        same = trees["baseline"]["digest"] == trees["ours"]["digest"]
        table += (f"\n\nSpeed-up over the baseline: {figures['speedup']:.2f}x; outputs "
                  + ("byte for byte the same." if same else "**differ** (the digests are not equal)."))
    return table


def _p50_ms(stats: Mapping[str, Any]) -> str:
    """A stage's p50 in ms, or "-" where the run had none (the fused job writes no view)."""
    return f"{stats['p50'] * 1e3:,.0f}" if "p50" in stats else "-"


def latency(record: Mapping[str, Any]) -> str:
    rows = [[f"{r['block_time_s']:g}", r.get("stages", "split"), f"{r['rate']:g}", r["publishers"], r["subscribers"],
             f"{r['latency']['count']:,}",
             f"{r['latency']['p50_ms']:,.0f}", f"{r['latency']['p95_ms']:,.0f}", f"{r['latency']['p99_ms']:,.0f}",
             _p50_ms(r["stages_s"]["block_to_view"]), _p50_ms(r["stages_s"]["view_to_update"])]
            for r in record["figures"]["runs"]]
    return markdown_table(["block time (s)", "stages", "publishes/s", "publishers", "subscribers", "updates measured",
                           "p50 (ms)", "p95 (ms)", "p99 (ms)", "block to view, p50 (ms)",
                           "view to update, p50 (ms)"], rows)


def _arm(run: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in run["changes"].items()) or "baseline"


def latency_budget(record: Mapping[str, Any]) -> str:
    """Per block time, the spans of a block's way per arm (mean ms over its rounds' blocks, and share of the
    block-to-last-update mean, which they add up to); then every run's end-to-end figures and the machine's load."""
    figures = record["figures"]
    labels: Mapping[str, str] = figures["spans"]
    runs = [r for r in figures["runs"] if r["budget"].get("blocks")]
    tables = []
    for block_time in dict.fromkeys(r["block_time_s"] for r in runs):
        arms: dict[str, list[Mapping[str, Any]]] = {}
        for r in runs:
            if r["block_time_s"] == block_time:
                arms.setdefault(_arm(r), []).append(r)
        header = ["span"] + [cell for arm in arms for cell in (f"{arm}: mean (ms)", "share")]
        rows = []
        for name, label in [*labels.items(), ("total", "**block to last update, mean**")]:
            row = [label]
            for arm_runs in arms.values():
                total = statistics.fmean(r["budget"]["total"]["mean_ms"] for r in arm_runs)
                mean = total if name == "total" else statistics.fmean(
                    r["budget"]["spans"][name]["mean_ms"] for r in arm_runs)
                row += [f"{mean:,.0f}", f"{mean / total:.0%}" if total else "-"]
            rows.append(row)
        first = next(iter(arms.values()))[0]
        tables.append(f"{block_time:g} s blocks, {first['rate']:g} publishes/s, {first['traffic_seconds']:g} s of "
                      f"traffic per run:\n\n" + markdown_table(header, rows))
    rows = [[f"{r['block_time_s']:g}", _arm(r), str(r["budget"]["blocks"]),
             f"{r['budget']['total']['mean_ms']:,.0f}", f"{r['budget']['total']['p50_ms']:,.0f}",
             f"{r['budget']['total']['p99_ms']:,.0f}", f"{r['latency']['count']:,}",
             f"{r['latency']['p50_ms']:,.0f}", f"{r['latency']['p99_ms']:,.0f}",
             f"{r['job_cpu_seconds']:.1f}" if "job_cpu_seconds" in r else "-", f"{r['load_average'][0]:.1f}"]
            for r in runs]
    tables.append("Every run, in the order run:\n\n" + markdown_table(
        ["block time (s)", "arm", "blocks", "block to last update, mean (ms)", "p50 (ms)", "p99 (ms)",
         "updates", "every update, p50 (ms)", "p99 (ms)", "job CPU during traffic (s)",
         "load average (1 min) at start"], rows, "rlrrrrrrrrr"))
    return "\n\n".join(tables)


def progress(record: Mapping[str, Any]) -> str:
    f = record["figures"]
    rows = [[name, f"{ms:.2f}", f"{f['ms_range'][name][0]:.2f}-{f['ms_range'][name][1]:.2f}",
             f"{f['python_cpu_ms_per_poll'][name]:.2f}"] for name, ms in f["ms_per_poll"].items()]
    return (f"{f['entries']} progress entries of {f['entry_json_bytes']:,} bytes held by Spark, {f['polls']} polls.\n\n"
            + markdown_table(["poll", "ms per poll", "range", "Python CPU ms"], rows))


def state(record: Mapping[str, Any]) -> str:
    best = record["figures"]["ops_per_cpu_second"]
    sides = list(best)
    header = ["pattern", *(f"{side}: ops per CPU s" for side in sides)]
    rows = [[name, *(f"{best[side][name]:,.0f}" for side in sides)] for name in best["ours"]]
    if "baseline" in best:
        header.append("ours / baseline")
        for row, name in zip(rows, best["ours"], strict=True):
            row.append(f"{best['ours'][name] / best['baseline'][name]:.2f}x")
    return markdown_table(header, rows)


def admission(record: Mapping[str, Any]) -> str:
    """The per-origin work of Stage R, measured twice (under cProfile, and timed without it), as shares of it."""
    profile, timing = record["figures"]["profile"], record["figures"]["timing"]
    p_relay, t_relay = profile["stage_r_s"], timing["stage_r_s"]

    def row(label: str, p: float, t: float) -> list[str]:
        return [label, f"{p:.3f}", f"{p / p_relay:.1%}", f"{t:.3f}", f"{t / t_relay:.1%}"]

    rows = [row(label, seconds, timing["parts_s"].get(label, 0.0)) for label, seconds in profile["parts_s"].items()]
    rows.append([f"**{c}**" for c in row("all of it", sum(profile["parts_s"].values()),
                                         sum(timing["parts_s"].values()))])
    rows.append(row(f"(of which ed25519 verification, {profile['calls']['verify_ed25519']:,} calls)",
                    profile["signature_s"], timing["signature_s"]))
    rows.append(row("(not counted: XCM barrier check, reads the relay's config)", profile["barrier_s"],
                    timing["barrier_s"]))
    return (f"Stage R: {p_relay:.2f} s of {profile['profiled_s']:.2f} s under cProfile, {t_relay:.2f} s of "
            f"{timing['total_s']:.2f} s timed without it (the rest is Stage S).\n\n"
            + markdown_table(["per-origin work in Stage R", "cProfile: CPU s", "share", "timed, no profiler: CPU s",
                              "share"], rows))


RECOVERY_ORDER = ("interpreter and imports", "Kafka and topics", "Spark's launcher", "JVM start", "Spark session",
                  "standby took over", "queries started", "first batch", "catch-up")
"""The phases of a restart and of a standby's take-over, in the order they happen (``benchmarks.recovery_bench``)."""


def recovery(record: Mapping[str, Any]) -> str:
    """A SIGKILLed job's restart: per variant, the median (range) of each phase and of the two end points, with the
    change of each later variant against the first."""
    figures = record["figures"]
    variants: dict[str, Any] = figures["variants"]
    names = list(variants)

    def cell(spread: Mapping[str, float] | None) -> str:
        return "-" if spread is None else f"{spread['median']:.2f} ({spread['min']:.2f}-{spread['max']:.2f})"

    def change(first: Mapping[str, float] | None, other: Mapping[str, float] | None) -> str:
        return "-" if not first or not other or not first["median"] else f"{other['median'] / first['median'] - 1:+.0%}"

    phases: list[str] = []
    for variant in variants.values():
        phases += [name for name in variant["summary"]["phases"] if name not in phases]
    phases.sort(key=lambda name: RECOVERY_ORDER.index(name) if name in RECOVERY_ORDER else len(RECOVERY_ORDER))
    lines = [(name, [variants[v]["summary"]["phases"].get(name) for v in names]) for name in phases]
    start = " (standby: kill)" if "standby" in names else ""
    lines += [(label, [variants[v]["summary"].get(key) for v in names])
              for label, key in ((f"**restart{start} -> first committed batch**", "first_batch_s"),
                                 (f"**restart{start} -> first update after the kill**", "first_update_s"))]
    rows = [[label, *(cell(s) for s in spreads), *(change(spreads[0], s) for s in spreads[1:])]
            for label, spreads in lines]
    loads = [run["load_average_before"][0] for variant in variants.values() for run in variant["runs"]]
    plan = figures["plan"]
    note = (f"{variants[names[0]]['summary']['runs']} kills per variant, alternated; seconds, median (range). "
            f"Live workload at {plan['block_time']:g} s blocks, {plan['rate']:g} records/s, trigger "
            f"{plan['trigger_seconds']:g} s, {plan['settle_seconds']:g} s of running between a recovery and the next "
            f"kill. 1-minute load average before the kills: {min(loads):.1f}-{max(loads):.1f} on "
            f"{record['machine'].get('cores', '?')} cores. Cold start (empty checkpoint, {names[0]}): first batch "
            f"{figures['cold_start']['first_batch_s']:.1f} s, first update {figures['cold_start']['first_update_s']:.1f} s.")
    waiting = variants.get("standby", {}).get("summary", {})
    if "standby_cpu_share" in waiting:
        cpu, rss = waiting["standby_cpu_share"], waiting["standby_rss_mib"]
        note += (f" A waiting standby (its JVM and Python, over the last seconds before each kill) used "
                 f"{cpu['median']:.1%} of a core ({cpu['min']:.1%}-{cpu['max']:.1%}) and held {rss['median']:,.0f} "
                 f"MiB ({rss['min']:,.0f}-{rss['max']:,.0f}).")
    header = ["phase (s)", *names, *(f"{name} vs {names[0]}" for name in names[1:])]
    return note + "\n\n" + markdown_table(header, rows)


def ship_bench(record: Mapping[str, Any]) -> str:
    """The job's start-up on a standalone cluster per way its code reaches the executors: each run's wall time, its
    first batch and whether its outputs equal the simulator's."""
    figures = record["figures"]

    def each(runs: Sequence[Mapping[str, Any]], key: str) -> str:
        return ", ".join(f"{run[key]:.1f}" for run in runs)

    rows = [[mode, each(runs, "wall_seconds"), each(runs, "first_batch_seconds"),
             ", ".join("yes" if run["equal_to_simulator"] else "no" for run in runs)]
            for mode, runs in figures["runs"].items()]
    note = (f"{figures['wheel']} installed into a fresh venv in {figures['install_seconds']:.0f} s; the venv packed "
            f"({figures['archive_mib']:.0f} MiB) in {figures['pack_seconds']:.0f} s, once per venv content; the "
            f"project zip {figures['project_zip_kib'] / 1024:.1f} MiB. 1-minute load average at the start: "
            f"{record['machine']['load_average'][0]:.1f}.")
    return note + "\n\n" + markdown_table(["mode", "wall s (per run)", "first batch s (per run)",
                                           "outputs equal the simulator"], rows)


RENDERERS: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "metering": metering, "seam": seam, "trie": trie, "simulator": simulator, "pipeline": pipeline,
    "mapstate": mapstate, "scaling": scaling, "admission": admission, "latency": latency, "progress": progress,
    "state": state, "latency_budget": latency_budget, "recovery": recovery,
    "ship_bench": ship_bench,
}
"""Result name (benchmarks/results/<name>.json) -> its table; the doc's section markers use the same name."""


def render(name: str) -> str:
    """The section body for one result: where it comes from, then its tables."""
    record = read_result(name)
    return provenance(record) + "\n\n" + RENDERERS[name](record)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.render", description=__doc__.splitlines()[0])
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"results to render (default: all of {', '.join(RENDERERS)})")
    parser.add_argument("--print", action="store_true", help="print the sections instead of writing the doc")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in RENDERERS]
    if unknown:
        parser.error(f"no table for {', '.join(unknown)}: choose from {', '.join(RENDERERS)}")
    missing = 0
    for name in args.names or RENDERERS:
        if not (RESULTS_DIR / f"{name}.json").exists():
            print(f"{name}: no benchmarks/results/{name}.json, section left as it is", file=sys.stderr)
            continue
        body = render(name)
        if args.print:
            print(f"<!-- {name} -->\n{body}\n")
        elif not update_section(DOC, name, body):
            print(f"{name}: no <!-- BEGIN {name} --> / <!-- END {name} --> markers in {DOC.name}", file=sys.stderr)
            missing += 1
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
