"""The CI gate end to end, whole processes: the README's recommended gates against pytrec_eval and trec_eval.

Two tables.

**The gate** (default). Data (seeded, in a scratch folder): MS MARCO-dev-shaped qrels and 11 runs of
``--queries`` x ``--docs`` lines (default 6,980 x 1,000, about 300 MB each; ``common.write_data`` writes
the qrels and the first run, the others rank the same judged passages at other depths). The spec is the
README's "spec in one minute" (its measures and gates, read from README.md) with the 10 baselines and a
candidate. Cases, each a fresh process timed as a whole (interpreter start and imports included), its peak
resident memory from ``wait4``; the cases alternate over the repeats (a busy machine slows all alike):

- ``pytrec_eval alone``: parse the qrels and the candidate, evaluate the spec's measures (the unit of the
  ratios); ``trec_eval -q`` the same from the binary given by ``--trec-eval`` (skipped without it);
  ``ir_measures`` and ``ranx`` (``--ranx-python``, a Python with ranx installed) likewise.
- ``evaluate cold`` / ``evaluate cached``: ``bvtest evaluate --mean`` of the candidate into an empty cache,
  then again from the cache it filled.
- ``check all cached`` / ``check candidate new``: ``bvtest check`` with every run's per-topic scores cached,
  or with ``--run`` naming a new candidate file in every repeat; ``check all cached, no power``: the same
  spec with ``analysis: {power: false}``, so that the difference is what each gate's power costs
  (docs/mathematics.md §9).
- ``pytest cached`` / ``pytest candidate new``: ``pytest SPEC`` the same two ways (without hypothesis's
  plugin, which the test extra installs and which imports hypothesis in its terminal summary).

The children write and reuse bytecode (``PYTHONDONTWRITEBYTECODE`` is removed from their environment), as
a CI runner's Python does; a warm-up run fills the caches.

**Three qrels** (``--qrels-cases``; all three by default), the same runs judged three ways, since what the corners of
unjudged documents and the plausible verdicts pay for is how many of the top 10 documents are unjudged, and whether the
corners disagree:

- ``written``: ``common.write_data``'s qrels (one or two relevant passages per query, up to three of the first run's
  passages judged non-relevant; Judged@10 about 0.02): the table above, every case;
- ``sparse``: MS MARCO dev's convention, one relevant passage per query and no grade-0 row, the passage one the
  reference ranks in its top 10 (its own relevant one where it ranks it there, else one of its top 10 drawn at random:
  MS MARCO's annotators judged a production engine's results), so the reference's Judged@10 is 0.1 and the other
  runs' about 0.02: the candidate looks worse than it is, its corners disagree and its plausible gradings are drawn;
- ``pooled``: a TREC pool, the top 10 of the first three baselines judged (grade 1 where ``write_data`` made the
  passage relevant, 0 otherwise): the reference fully judged at 10, the candidate's top 10 almost wholly unjudged.

For ``sparse`` and ``pooled`` the table has ``pytrec_eval alone`` on that qrels (the unit of its ratios, measured in
the same repeats), ``check all cached`` and ``check candidate new``; each case keeps its spec, qrels and cache in a
folder of its own (the runs linked into it), and its new candidates are its own files (a new candidate is new to
every cache). The last line gives the worst ratio of the three.

**Scaling** (``--scaling``): ``bvtest check`` of the same gates with every system read from one per-topic
Parquet table (``system, topic, measure, value``; seeded scores shaped like nDCG@10 and AP), for
``--topics`` topics at 10 baselines and ``--baselines`` baselines at 6,980 topics; then ``bvtest
evaluate`` of one run of 100 documents per topic at the smallest sizes against trec_eval and pytrec_eval.

**Many gates** (``--many-gates``): ``bvtest check`` of ``--gates`` gates (100 and 1,000 by default) over one such
table of ``--gate-topics`` topics and four measures, the gates cycling through eight statistics, every other one
calibrated, each with its own bound; CPU, peak memory and the JSON report's size (``--no-json``: without it, whose
size grows with the square of the calibrated gates).

Ratios are of medians: wall over ``pytrec_eval alone``'s median wall, CPU over its median CPU (CPU is the
steadier on a shared machine). Run it from the repository root::

    python -m benchmarks.bench_gate --queries 700 --trec-eval /tmp/trec_eval/trec_eval   # a tenth, for development
    python -m benchmarks.bench_gate --trec-eval /tmp/trec_eval/trec_eval                  # 6,980 x 1,000
    python -m benchmarks.bench_gate --scaling --trec-eval /tmp/trec_eval/trec_eval
    python -m benchmarks.bench_gate --many-gates --keep-reports /tmp/reports   # the JSON reports, to compare
    python -m benchmarks.bench_gate --compare ../old-checkout                             # an older version's check too
    python -m benchmarks.bench_gate --data /tmp/gate-data   # keep the runs (11 minutes to write) for the next time

trec_eval is not packaged for Debian or PyPI: build it from https://github.com/usnistgov/trec_eval with
``make CFLAGS='-O2 -I. -DVERSIONID=\\"10.0\\"'`` and give the binary's path.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import yaml

from benchmarks.common import REPOSITORY_ROOT, SEED, write_data

BASELINES = 10

# the peers' names of the README's measures
PYTREC_EVAL_MEASURES = {"nDCG@10": "ndcg_cut.10", "AP": "map", "RR": "recip_rank"}
RANX_MEASURES = {"nDCG@10": "ndcg@10", "AP": "map", "RR": "mrr"}

PYTREC_EVAL = """
import sys, pytrec_eval
with open(sys.argv[1]) as handle: judgments = pytrec_eval.parse_qrel(handle)
with open(sys.argv[2]) as handle: rankings = pytrec_eval.parse_run(handle)
results = pytrec_eval.RelevanceEvaluator(judgments, set(sys.argv[3:])).evaluate(rankings)
print(len(results))
"""
IR_MEASURES = """
import sys, ir_measures
qrels, run = ir_measures.read_trec_qrels(sys.argv[1]), ir_measures.read_trec_run(sys.argv[2])
print(len(list(ir_measures.iter_calc([ir_measures.parse_measure(name) for name in sys.argv[3:]], qrels, run))))
"""
RANX = """
import sys
from ranx import Qrels, Run, evaluate
qrels, run = Qrels.from_file(sys.argv[1], kind="trec"), Run.from_file(sys.argv[2], kind="trec")
print(len(evaluate(qrels, run, sys.argv[3:], return_mean=False)))
"""


def recommended_spec() -> tuple[list[str], list[dict]]:
    """The measures and gates of the README's "spec in one minute" (its first YAML block with gates)."""
    readme = (REPOSITORY_ROOT / "README.md").read_text(encoding="utf-8")
    for block in re.findall(r"```yaml\n(.*?)```", readme, flags=re.S):
        spec = yaml.safe_load(block)
        if isinstance(spec, dict) and spec.get("gates"):
            return list(spec["measures"]), list(spec["gates"])
    sys.exit("README.md has no YAML block with gates")


def write_system_run(path: Path, qrels_path: Path, docs: int, seed: int, depth: float) -> None:
    """A run over the qrels' queries whose relevant passages sit at ranks drawn with mean ``depth * docs / 20``."""
    rng = np.random.default_rng(seed)
    relevant: dict[str, list[str]] = {}
    for line in qrels_path.read_text().splitlines():
        qid, _, docno, grade = line.split()
        relevant.setdefault(qid, [])
        if grade != "0":
            relevant[qid].append(docno)
    ranks = np.arange(1, docs + 1)
    with open(path, "w", encoding="utf-8") as run:
        for qid, judged in relevant.items():
            retrieved = rng.choice(8_841_823, size=docs, replace=False).astype(str).tolist()
            for docno in judged:
                if rng.random() < 0.85 and docno not in retrieved:
                    retrieved[min(int(rng.exponential(depth * docs / 20)), docs - 1)] = docno
            scores = np.sort(rng.normal(12.0, 3.0, size=docs))[::-1]
            run.write(
                "".join(
                    f"{qid} Q0 {doc} {rank} {score:.6f} system{seed}\n"
                    for doc, rank, score in zip(retrieved, ranks, scores)
                )
            )


def gates_yaml(gates: Sequence[dict]) -> list[str]:
    return ["gates:"] + [
        f"  - {yaml.safe_dump(gate, default_flow_style=True, sort_keys=False).strip()}" for gate in gates
    ]


def write_spec(
    folder: Path, qrels: Path, baselines: list[Path], candidate: Path, name: str = "bvtest.yaml", analysis: str = ""
) -> Path:
    """The README's spec over these runs: its measures and gates, the first baseline as the reference."""
    measures, gates = recommended_spec()
    lines = [f"qrels: {qrels.name}", f"measures: [{', '.join(measures)}]", "baselines:"]
    lines += [f"  b{i}: {path.name}" for i, path in enumerate(baselines)]
    lines += [f"candidate: {candidate.name}", "reference: b0", *([analysis] if analysis else []), *gates_yaml(gates)]
    spec = folder / name
    spec.write_text("\n".join(lines) + "\n")
    return spec


# GNU time measures the child from its own small process: a child forked from this Python would count this
# process's pages in its peak resident memory (ru_maxrss) until it execs.
GNU_TIME = "/usr/bin/time" if Path("/usr/bin/time").exists() else None


# The children write and reuse bytecode as a CI runner's Python does (a session that sets
# PYTHONDONTWRITEBYTECODE compiles every module at every start: a third of a second more per process).
CHILD_ENVIRONMENT = {name: value for name, value in os.environ.items() if name != "PYTHONDONTWRITEBYTECODE"}


def timed(command: Sequence[str], cwd: Path = REPOSITORY_ROOT) -> tuple[float, float, float]:
    """Wall seconds, CPU seconds (user + system) and peak resident MB of one fresh process (exit 0 or 1:
    a failed gate is fine)."""
    prefix = [GNU_TIME, "-f", "bench-time %e %U %S %M"] if GNU_TIME else []
    started = time.perf_counter()
    process = subprocess.Popen(
        [*prefix, *command], cwd=cwd, env=CHILD_ENVIRONMENT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(process.pid, 0)
    wall = time.perf_counter() - started
    errors = process.stderr.read().decode() if process.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 1):
        sys.exit(f"{' '.join(command)} failed ({code}):\n{errors}")
    if GNU_TIME:
        _, _, user, system, peak = errors.strip().splitlines()[-1].split()
        return wall, float(user) + float(system), int(peak) / 1024
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024


def load_average() -> str:
    return " ".join(f"{value:.1f}" for value in os.getloadavg())


def print_table(results: dict[str, list[tuple[float, float, float]]], unit: str, skipped: dict[str, str]) -> None:
    reference = statistics.median(wall for wall, _, _ in results[unit])
    reference_cpu = statistics.median(cpu for _, cpu, _ in results[unit])
    width = max(24, *(len(name) for name in [*results, *skipped]))
    header = (
        f"{'case':<{width}} {'median s':>9} {'best s':>7} {'x ' + unit:>20} {'median cpu s':>13} "
        f"{'cpu x ' + unit:>24} {'peak RSS MB':>12}"
    )
    print(header)
    print("-" * len(header))
    for name, rows in results.items():
        median = statistics.median(wall for wall, _, _ in rows)
        cpu = statistics.median(cpu for _, cpu, _ in rows)
        print(
            f"{name:<{width}} {median:>9.2f} {min(wall for wall, _, _ in rows):>7.2f} {median / reference:>20.2f} "
            f"{cpu:>13.2f} {cpu / reference_cpu:>24.2f} {max(peak for _, _, peak in rows):>12.0f}"
        )
    for name, why in skipped.items():
        print(f"{name:<{width}} skipped ({why})")


def peer_commands(
    python: str, qrels: Path, run: Path, measures: Sequence[str], trec_eval: str | None, ranx_python: str | None
) -> tuple[dict[str, list[str]], dict[str, str]]:
    """The peers' commands on one run, and the peers skipped with the reason."""
    commands = {
        "pytrec_eval alone": [python, "-c", PYTREC_EVAL, str(qrels), str(run)]
        + [PYTREC_EVAL_MEASURES[m] for m in measures],
        "ir_measures": [python, "-c", IR_MEASURES, str(qrels), str(run), *measures],
    }
    skipped = {}
    if trec_eval:
        options = [option for m in measures for option in ("-m", PYTREC_EVAL_MEASURES[m])]
        commands["trec_eval -q"] = [trec_eval, "-q", *options, str(qrels), str(run)]
    else:
        skipped["trec_eval -q"] = "no trec_eval binary: give --trec-eval PATH"
    if ranx_python:
        commands["ranx"] = [ranx_python, "-c", RANX, str(qrels), str(run)] + [RANX_MEASURES[m] for m in measures]
    else:
        skipped["ranx"] = "ranx not installed: give --ranx-python"
    return commands, skipped


def system_run(path: Path, qrels_path: Path, docs: int, seed: int, depth: float) -> Path:
    """:func:`write_system_run` unless a run of that seed is at ``path`` already (a kept ``--data`` folder)."""
    done = path.with_name(f"{path.name}.{seed}.written")
    if not (path.exists() and done.exists()):
        write_system_run(path, qrels_path, docs, seed, depth)
        done.touch()
    return path


def kept_data(folder: Path, queries: int, docs: int) -> tuple[Path, Path]:
    """:func:`~benchmarks.common.write_data` unless the folder holds it already; every cache in the folder is
    removed, so that a kept folder starts as a fresh one (only the inputs are kept)."""
    for cache in [*folder.glob("cache-*"), *folder.glob(".bvtest_cache")]:
        shutil.rmtree(cache)
    run, qrels = folder / f"run_{queries}x{docs}.txt", folder / f"qrels_{queries}.txt"
    done = folder / f"data_{queries}x{docs}.written"
    if run.exists() and qrels.exists() and done.exists():
        return run, qrels
    written = write_data(folder, queries, docs)
    done.touch()
    return written


QRELS_CASES = ("written", "sparse", "pooled")
POOLED_RUNS, POOL_DEPTH = 3, 10


def top_documents(run: Path, depth: int) -> dict[str, list[str]]:
    """Each query's first ``depth`` passages of a run written in rank order (as ``write_system_run`` writes)."""
    top: dict[str, list[str]] = {}
    with open(run, encoding="utf-8") as lines:
        for line in lines:
            qid, _, docno, _ = line.split(maxsplit=3)
            ranked = top.setdefault(qid, [])
            if len(ranked) < depth:
                ranked.append(docno)
    return top


def relevant_passages(qrels: Path) -> dict[str, set[str]]:
    relevant: dict[str, set[str]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, docno, grade = line.split()
        if int(grade) > 0:
            relevant.setdefault(qid, set()).add(docno)
    return relevant


def write_sparse_qrels(qrels: Path, reference: Path, target: Path) -> None:
    """One relevant passage per query, no grade-0 row: the reference's relevant passage where its top 10 holds one,
    else one of its top 10 drawn at random (seed ``SEED``)."""
    rng = np.random.default_rng(SEED)
    relevant = relevant_passages(qrels)
    lines = []
    for qid, ranked in top_documents(reference, POOL_DEPTH).items():
        own = [docno for docno in ranked if docno in relevant.get(qid, ())]
        lines.append(f"{qid} 0 {own[0] if own else ranked[int(rng.integers(len(ranked)))]} 1\n")
    target.write_text("".join(lines))


def write_pooled_qrels(qrels: Path, runs: Sequence[Path], target: Path) -> None:
    """The top 10 of ``runs`` judged: grade 1 where ``qrels`` holds the passage relevant, 0 otherwise."""
    relevant = relevant_passages(qrels)
    pools: dict[str, dict[str, None]] = {}
    for run in runs:
        for qid, ranked in top_documents(run, POOL_DEPTH).items():
            pools.setdefault(qid, {}).update(dict.fromkeys(ranked))
    target.write_text(
        "".join(
            f"{qid} 0 {docno} {int(docno in relevant.get(qid, ()))}\n" for qid, pool in pools.items() for docno in pool
        )
    )


def case_folder(folder: Path, case: str, qrels: Path, baselines: Sequence[Path], candidate: Path) -> Path:
    """A folder for the qrels case ``case``: its qrels, the runs linked into it, its spec and its own cache (so that no
    stat record or score of another case is found)."""
    if case == "written":
        return write_spec(folder, qrels, list(baselines), candidate)
    home = folder / f"case-{case}"
    home.mkdir(exist_ok=True)
    shutil.rmtree(home / ".bvtest_cache", ignore_errors=True)
    judged = home / f"qrels-{case}.txt"
    done = home / f"qrels-{case}.written"
    if not (judged.exists() and done.exists()):
        if case == "sparse":
            write_sparse_qrels(qrels, baselines[0], judged)
        else:
            write_pooled_qrels(qrels, baselines[:POOLED_RUNS], judged)
        done.touch()
    linked = []
    for run in [*baselines, candidate]:
        link = home / run.name
        if not link.is_symlink():
            link.symlink_to(run)
        linked.append(link)
    return write_spec(home, judged, linked[:-1], linked[-1])


def qrels_case_table(
    arguments: argparse.Namespace, folder: Path, qrels: Path, baselines: Sequence[Path], candidate: Path
) -> dict[str, float]:
    """The three qrels cases alternated over the repeats: per case pytrec_eval alone on its qrels, the check all
    cached and with a new candidate; prints each case's table and returns its CPU ratios."""
    python = sys.executable
    measures, _ = recommended_spec()
    specs = {case: case_folder(folder, case, qrels, baselines, candidate) for case in arguments.qrels_cases}
    for case, spec in specs.items():
        judged = spec.parent / yaml.safe_load(spec.read_text())["qrels"]
        print(f"{case}: {judged_at_10(judged, [baselines[0], candidate])}")
        for _ in range(2):  # fills the case's cache (the second pass once the files' stat records have aged)
            timed([python, "-m", "pytest_bvtest.cli", "check", str(spec)])
    names = ["pytrec_eval alone", "check all cached", "check candidate new"]
    results = {case: {name: [] for name in names} for case in specs}
    for repeat in range(arguments.repeat):
        for index, (case, spec) in enumerate(specs.items()):
            judged = spec.parent / yaml.safe_load(spec.read_text())["qrels"]
            new_candidate = system_run(
                spec.parent / f"new-candidate-{case}-{repeat}.run",
                qrels,
                arguments.docs,
                SEED + 500 + 10 * index + repeat,
                0.8,
            )
            check = [python, "-m", "pytest_bvtest.cli", "check", str(spec)]
            commands = {
                "pytrec_eval alone": [python, "-c", PYTREC_EVAL, str(judged), str(candidate)]
                + [PYTREC_EVAL_MEASURES[m] for m in measures],
                "check all cached": check,
                "check candidate new": [*check, "--run", str(new_candidate)],
            }
            for name in names:
                results[case][name].append(timed(commands[name]))
    ratios = {}
    for case, rows in results.items():
        print(f"\nqrels case {case!r}:")
        print_table(rows, "pytrec_eval alone", {})
        unit = statistics.median(cpu for _, cpu, _ in rows["pytrec_eval alone"])
        for name in names[1:]:
            ratios[f"{case}: {name}"] = statistics.median(cpu for _, cpu, _ in rows[name]) / unit
    return ratios


def judged_at_10(qrels: Path, runs: Sequence[Path]) -> str:
    """Judged@10 of each run on ``qrels``, and the judgments per query."""
    judged: dict[str, set[str]] = {}
    for line in qrels.read_text().splitlines():
        qid, _, docno, _ = line.split()
        judged.setdefault(qid, set()).add(docno)
    shares = []
    for run in runs:
        top = top_documents(run, POOL_DEPTH)
        hits = sum(docno in judged.get(qid, ()) for qid, ranked in top.items() for docno in ranked)
        shares.append(f"{run.name} {hits / sum(len(ranked) for ranked in top.values()):.3f}")
    count = sum(len(docnos) for docnos in judged.values())
    return f"{count / max(len(judged), 1):.2f} judgments per query; Judged@10 {', '.join(shares)}"


def gate_table(arguments: argparse.Namespace, folder: Path) -> None:
    python = sys.executable
    measures, _ = recommended_spec()
    started = time.perf_counter()
    first_run, qrels = kept_data(folder, arguments.queries, arguments.docs)
    baselines = [first_run]
    for i in range(1, BASELINES):
        baselines.append(system_run(folder / f"baseline{i}.run", qrels, arguments.docs, SEED + i, 0.6 + 0.1 * i))
    candidate = system_run(folder / "candidate.run", qrels, arguments.docs, SEED + 100, 0.8)
    spec = write_spec(folder, qrels, baselines, candidate)
    without_power = write_spec(folder, qrels, baselines, candidate, "bvtest-no-power.yaml", "analysis: {power: false}")
    size = sum(path.stat().st_size for path in [*baselines, candidate]) / 1e6
    print(
        f"data: {arguments.queries:,} queries x {arguments.docs:,} docs, 11 runs, {size / 11:.0f} MB each "
        f"(seed {SEED}, written in {time.perf_counter() - started:.0f} s); the README's gates on "
        f"{', '.join(measures)}; machine: {os.cpu_count()} cores, shared"
    )

    evaluate = [python, "-m", "pytest_bvtest.cli", "evaluate", "--mean", "--qrels", str(qrels)]
    evaluate += [option for measure in measures for option in ("-m", measure)]
    check = [python, "-m", "pytest_bvtest.cli", "check", str(spec)]
    check_without_power = [python, "-m", "pytest_bvtest.cli", "check", str(without_power)]
    # hypothesis (installed by the test extra, not by the plugin) imports itself in its terminal summary: 1 s more
    # --bvtest-spec: the folder holds the no-power spec too, and a --bvtest-run names the spec it is for
    run_pytest = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:hypothesispytest", spec.name]
    run_pytest += ["--bvtest-spec", spec.name]
    for _ in range(2):  # fills the specs' caches; the second pass records the files' stat once they have aged
        timed(check)
        timed(check_without_power)  # its plausible verdicts are keyed by its own settings
    timed([*evaluate, "--cache-dir", str(folder / "cache-evaluate"), str(candidate)])
    peers, skipped = peer_commands(python, qrels, candidate, measures, arguments.trec_eval, arguments.ranx_python)
    compared = Path(arguments.compare).resolve() if arguments.compare else None
    if compared is not None:
        for _ in range(2):  # the other checkout's own cache entries
            timed(check, compared)
    cases = [
        "pytrec_eval alone",
        *(name for name in peers if name != "pytrec_eval alone"),
        "evaluate cold",
        "evaluate cached",
        "check all cached",
        "check all cached, no power",
        "check candidate new",
        "pytest cached",
        "pytest candidate new",
        *(["check all cached (compared)", "check candidate new (compared)"] if compared is not None else []),
    ]
    results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in cases}
    loads = []
    for repeat in range(arguments.repeat):
        loads.append(os.getloadavg()[0])
        new_candidate = system_run(
            folder / f"new-candidate-{repeat}.run", qrels, arguments.docs, SEED + 200 + repeat, 0.8
        )
        newer_candidate = system_run(
            folder / f"newer-candidate-{repeat}.run", qrels, arguments.docs, SEED + 300 + repeat, 0.8
        )
        commands: dict[str, tuple[list[str], Path]] = {
            name: (command, REPOSITORY_ROOT) for name, command in peers.items()
        }
        commands["evaluate cold"] = (
            [*evaluate, "--cache-dir", str(folder / f"cache-cold-{repeat}"), str(candidate)],
            REPOSITORY_ROOT,
        )
        commands["evaluate cached"] = (
            [*evaluate, "--cache-dir", str(folder / "cache-evaluate"), str(candidate)],
            REPOSITORY_ROOT,
        )
        commands["check all cached"] = (check, REPOSITORY_ROOT)
        commands["check all cached, no power"] = (check_without_power, REPOSITORY_ROOT)
        commands["check candidate new"] = ([*check, "--run", str(new_candidate)], REPOSITORY_ROOT)
        commands["pytest cached"] = (run_pytest, folder)
        commands["pytest candidate new"] = ([*run_pytest, f"--bvtest-run={newer_candidate}"], folder)
        if compared is not None:  # the same commands run from the other checkout: its package is imported
            commands["check all cached (compared)"] = (check, compared)
            newest_candidate = system_run(
                folder / f"newest-candidate-{repeat}.run", qrels, arguments.docs, SEED + 400 + repeat, 0.8
            )
            commands["check candidate new (compared)"] = ([*check, "--run", str(newest_candidate)], compared)
        for name in cases:
            command, cwd = commands[name]
            results[name].append(timed(command, cwd))
    print(f"load average (1 min) at each repeat's start: {', '.join(f'{load:.1f}' for load in loads)}")
    if compared is not None:
        print(f"(compared): the check run from {compared}")
    print_table(results, "pytrec_eval alone", skipped)
    if set(arguments.qrels_cases) - {"written"}:
        print()
        ratios = qrels_case_table(arguments, folder, qrels, baselines, candidate)
        worst = {name: max(ratio for key, ratio in ratios.items() if key.endswith(name)) for name in ("cached", "new")}
        print(
            f"\nworst CPU ratio over the qrels cases: check all cached {worst['cached']:.2f}x, "
            f"check candidate new {worst['new']:.2f}x pytrec_eval alone"
        )


# --- scaling ---------------------------------------------------------------------------------------


def write_score_table(path: Path, systems: int, topics: int, seed: int, measures: Sequence[str] | None = None) -> None:
    """A long Parquet table of seeded per-topic scores for ``systems`` systems, shaped like nDCG@10 and AP
    (``measures``: the README's by default).

    Per topic a difficulty, per system a skill; a third of the scores are 0 (no relevant document found).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    measures = measures or recommended_spec()[0]
    rng = np.random.default_rng(seed)
    difficulty = rng.beta(1.2, 2.5, size=topics)
    skill = rng.normal(0.0, 0.05, size=systems)
    names = np.array(["candidate"] + [f"b{i}" for i in range(systems - 1)])
    parts = []
    for measure in measures:
        values = np.clip(difficulty + skill[:, None] + rng.normal(0.0, 0.15, size=(systems, topics)), 0.0, 1.0)
        values[rng.random((systems, topics)) < 1 / 3] = 0.0
        parts.append(
            pa.table(
                {
                    "system": np.repeat(names, topics),
                    "topic": np.tile(np.arange(1, topics + 1), systems),
                    "measure": np.full(systems * topics, measure),
                    "value": values.ravel(),
                }
            )
        )
    pq.write_table(pa.concat_tables(parts), path)


def write_table_spec(folder: Path, table: Path, systems: int) -> Path:
    measures, gates = recommended_spec()
    lines = [f"measures: [{', '.join(measures)}]", "baselines:"]
    lines += [f"  b{i}: {{scores: {table.name}, system: b{i}}}" for i in range(systems - 1)]
    lines += [f"candidate: {{scores: {table.name}, system: candidate}}", "reference: b0", *gates_yaml(gates)]
    spec = folder / f"bvtest-{table.stem}.yaml"
    spec.write_text("\n".join(lines) + "\n")
    return spec


def scaling_table(arguments: argparse.Namespace, folder: Path) -> None:
    python = sys.executable
    sizes = [(topics, BASELINES) for topics in arguments.topics]
    sizes += [(6980, baselines) for baselines in arguments.baselines if (6980, baselines) not in sizes]
    print(f"the README's gates, every system from one Parquet table; load average {load_average()}")
    header = f"{'topics':>9} {'baselines':>9} {'table MB':>9} {'median s':>9} {'median cpu s':>13} {'peak RSS MB':>12}"
    print(header)
    print("-" * len(header))
    for topics, baselines in sizes:
        table = folder / f"scores-{topics}x{baselines}.parquet"
        write_score_table(table, baselines + 1, topics, SEED)
        spec = write_table_spec(folder, table, baselines + 1)
        rows = [
            timed([python, "-m", "pytest_bvtest.cli", "check", "--no-cache", str(spec)])
            for _ in range(arguments.repeat)
        ]
        print(
            f"{topics:>9,} {baselines:>9} {table.stat().st_size / 1e6:>9.1f} "
            f"{statistics.median(r[0] for r in rows):>9.2f} {statistics.median(r[1] for r in rows):>13.2f} "
            f"{max(r[2] for r in rows):>12.0f}",
            flush=True,
        )
        table.unlink()
    measures, _ = recommended_spec()
    for topics in arguments.run_topics:
        run, qrels = write_data(folder, topics, 100)
        peers, skipped = peer_commands(python, qrels, run, measures, arguments.trec_eval, None)
        evaluate = [python, "-m", "pytest_bvtest.cli", "evaluate", "--mean", "--qrels", str(qrels)]
        evaluate += [option for measure in measures for option in ("-m", measure)]
        results: dict[str, list[tuple[float, float, float]]] = {name: [] for name in ["pytrec_eval alone", *peers]}
        results["evaluate cold"] = []
        for repeat in range(arguments.repeat):
            for name in results:
                if name == "evaluate cold":
                    results[name].append(
                        timed([*evaluate, "--cache-dir", str(folder / f"cold-{topics}-{repeat}"), str(run)])
                    )
                else:
                    results[name].append(timed(peers[name]))
        print(f"\none run of {topics:,} queries x 100 docs; load average {load_average()}")
        print_table(results, "pytrec_eval alone", {name: why for name, why in skipped.items() if name != "ranx"})


# --- many gates ------------------------------------------------------------------------------------

# The statistics a many-gates spec cycles through (from stats/registry.py), each with the bound it takes.
MANY_GATES_STATISTICS = (
    ("mean", "max_decrease"),
    ("var", "max_increase"),
    ("bias2_plus_var", "max_increase"),
    ("bias2", "max_increase"),
    ("trisk", "max_decrease"),
    ("urisk", "max_decrease"),
    ("zrisk", "max_decrease"),
    ("hurt_topics", "max_increase"),
)
MANY_GATES_MEASURES = ("nDCG@10", "AP", "RR", "P@10")


def many_gates(count: int) -> list[dict]:
    """``count`` distinct gates cycling through the statistics and measures, every other one calibrated
    (``false_alarm``); the bounds differ, so no two gates are the same."""
    gates = []
    for index in range(count):
        statistic, bound = MANY_GATES_STATISTICS[index % len(MANY_GATES_STATISTICS)]
        measure = MANY_GATES_MEASURES[(index // len(MANY_GATES_STATISTICS)) % len(MANY_GATES_MEASURES)]
        gate: dict = {"statistic": statistic, "measure": measure, bound: round(0.001 + index * 1e-5, 6)}
        if index % 2:
            gate["false_alarm"] = 0.05
        gates.append(gate)
    return gates


def many_gates_table(arguments: argparse.Namespace, folder: Path) -> None:
    """``bvtest check`` of many gates (``--gates``, 100 and 1,000 by default; 10,000 with ``--no-json``) over one
    per-topic Parquet table, with ``--json`` unless ``--no-json``."""
    python = sys.executable
    topics, baselines = arguments.gate_topics, BASELINES
    table = folder / f"scores-{topics}x{baselines}.parquet"
    write_score_table(table, baselines + 1, topics, SEED, MANY_GATES_MEASURES)
    print(
        f"bvtest check of many gates ({', '.join(s for s, _ in MANY_GATES_STATISTICS)} on "
        f"{', '.join(MANY_GATES_MEASURES)}, every other one calibrated), {topics:,} topics, {baselines} baselines "
        f"from one Parquet table; load average {load_average()}"
    )
    header = f"{'gates':>7} {'median s':>9} {'median cpu s':>13} {'peak RSS MB':>12} {'JSON MB':>8}"
    print(header)
    print("-" * len(header))
    for count in arguments.gates:
        lines = [f"measures: [{', '.join(MANY_GATES_MEASURES)}]", "baselines:"]
        lines += [f"  b{i}: {{scores: {table.name}, system: b{i}}}" for i in range(baselines)]
        lines += [f"candidate: {{scores: {table.name}, system: candidate}}", "reference: b0"]
        spec = folder / f"bvtest-{count}-gates.yaml"
        spec.write_text("\n".join([*lines, *gates_yaml(many_gates(count))]) + "\n")
        report = folder / f"report-{count}.json"
        command = [python, "-m", "pytest_bvtest.cli", "check", "--no-cache", str(spec)]
        if not arguments.no_json:
            command[-1:-1] = ["--json", str(report)]
        rows = [timed(command) for _ in range(arguments.repeat)]
        size = "-" if arguments.no_json else f"{report.stat().st_size / 1e6:.1f}"
        print(
            f"{count:>7,} {statistics.median(r[0] for r in rows):>9.2f} {statistics.median(r[1] for r in rows):>13.2f}"
            f" {max(r[2] for r in rows):>12.0f} {size:>8}",
            flush=True,
        )
        if arguments.keep_reports and not arguments.no_json:
            shutil.copy(report, Path(arguments.keep_reports) / report.name)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=6980)
    parser.add_argument("--docs", type=int, default=1000, help="documents per query")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--trec-eval", default=None, help="path of a trec_eval binary (a peer; skipped without it)")
    parser.add_argument(
        "--ranx-python", default=None, help="a Python with ranx installed (default: this one, if it has ranx)"
    )
    parser.add_argument("--scaling", action="store_true", help="the scaling table instead of the gate table")
    parser.add_argument("--many-gates", action="store_true", help="the many-gates table instead")
    parser.add_argument("--gates", type=lambda text: [int(t) for t in text.split(",")], default=[100, 1000])
    parser.add_argument(
        "--no-json", action="store_true", help="many gates without --json (its size is quadratic in the gates)"
    )
    parser.add_argument("--gate-topics", type=int, default=1000, help="topics of the many-gates table")
    parser.add_argument("--keep-reports", default=None, help="copy the many-gates table's JSON reports here")
    parser.add_argument(
        "--qrels-cases",
        type=lambda text: text.split(","),
        default=list(QRELS_CASES),
        help=f"the qrels cases timed beside the first table (default: {','.join(QRELS_CASES)})",
    )
    parser.add_argument(
        "--compare", default=None, help="another checkout of pytest-bvtest whose bvtest check is timed on the same data"
    )
    parser.add_argument(
        "--topics",
        type=lambda text: [int(t) for t in text.split(",")],
        default=[1000, 6980, 50_000, 200_000, 1_000_000],
    )
    parser.add_argument("--baselines", type=lambda text: [int(t) for t in text.split(",")], default=[10, 50, 200])
    parser.add_argument("--run-topics", type=lambda text: [int(t) for t in text.split(",")], default=[1000, 6980])
    parser.add_argument(
        "--data",
        default=None,
        help="keep the gate table's runs in this folder and reuse them next time (its caches are removed at the "
        "start; default: a scratch folder, removed at the end)",
    )
    arguments = parser.parse_args()
    if arguments.ranx_python is None and importlib.util.find_spec("ranx"):
        arguments.ranx_python = sys.executable
    if arguments.trec_eval and not shutil.which(arguments.trec_eval):
        sys.exit(f"--trec-eval {arguments.trec_eval}: not an executable")
    kept = arguments.data is not None and not arguments.scaling and not arguments.many_gates
    folder = Path(arguments.data) if kept else Path(tempfile.mkdtemp(prefix="bench_gate_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        if arguments.many_gates:
            many_gates_table(arguments, folder)
        else:
            (scaling_table if arguments.scaling else gate_table)(arguments, folder)
    finally:
        if not kept:
            shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
