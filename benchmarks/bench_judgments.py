"""Would a green still be green, and a red still red, if someone judged everything? Partial qrels against fuller ones.

Each *change* is a candidate run against a reference run, judged by the README's four gates on nDCG@10 (``trisk``;
``var`` and ``bias2_plus_var`` with ``max_increase: 10%``; ``mean`` with ``max_decrease: 0.01``; all calibrated,
``false_alarm: 0.05``, family-wise) twice:

- **CI**: ``bvtest check`` (in this process, through :func:`pytest_bvtest.cli.main`, exit code and JSON report) on the
  *partial* qrels, with the spec's ``judgments`` as the defaults have them (or as ``--judgments`` sets them);
- **truth**: the same spec on the *fuller* qrels, every gate as judged (unjudged documents non-relevant, as trec_eval
  counts them): the verdict someone who judged (almost) everything would get.

Per scenario it prints the changes the fuller qrels fail and pass, the **false greens** (CI passes, the fuller qrels
fail; a share of the changes they fail), the **false reds** (the reverse; a share of those they pass), the share of
gates UNDECIDED under the partial qrels, whether every clearly worse candidate is red, and of the gates the plausible
gradings decided (at the default confidence, 0.95), those whose side the fuller qrels do not take (MATH.md §8's
calibration target: at most eps of them).

The fuller qrels have holes of their own (DL-HARD's judge about half of each re-ranker's top 10), and the truth above
counts their unjudged documents non-relevant, as trec_eval does. So each change's truth is also checked on the fuller
qrels with their own unjudged documents weighed (the plugin's defaults): it is *settled* when a gate that fails on
them is ``FAIL`` there too, or when every gate passes and none is ``UNDECIDED`` there. The table counts the changes
whose truth is not settled ("fuller qrels undecided") and gives the false greens and reds among the settled ones
beside the counts over every change, and the gates the gradings decided wrongly among those the fuller qrels settle
(their outcome there not ``UNDECIDED``), by the side they settle them on. A gate the fuller qrels settle by their
own gradings is judged by the plugin's prior on both sides; one whose corners agree there is not.

A second table measures what the fuller qrels say of the top-10 documents the partial qrels judge and leave unjudged
(relevant at any grade, at the top grade), for the candidates and references of the real changes: the evidence the
prior of an unjudged grade (docs/mathematics.md §10) is set from.

Scenarios (``../shared/data``, or ``BVTEST_SHARED_DATA``):

- **TREC-COVID r4**: OHSU's round-4 runs (identical rankings once), with the qrels of rounds 1-4 against the complete
  qrels (round 5 judged more); reference the production fusion ``R4_total_fusion``, and ``FullOHSU``.
- **DL19 pool2**: DL19 passage's four re-rankers, qrels kept to the pairs the top 10 of monoT5 and DRMM pooled,
  against the full DL19 qrels; every ordered pair.
- **DL-HARD pool**: DL-HARD's document runs, qrels kept to the top 10 of its two first stages (BM25, BM25+RM3),
  against the full qrels; every run against BM25 and against BM25+ELECTRA.
- **example pool5**: the example project's five runs, qrels kept to the top 5 of production and bm25-alt, against
  its qrels (every top 10 judged); the shipped predictor compares texts there.
- **DL19 sparse**: MS MARCO's convention, one relevant passage per topic and no grade-0 row (one of its top-graded
  judgments that some run ranks in its top 10, drawn at random, as MS MARCO's annotators marked a passage among a
  production engine's results), against the full DL19 qrels.

Clearly worse candidates, in every scenario, made from a reference (seeded with ``SEED``): ``shuffle`` (its top 100
shuffled on half the topics), ``deep5`` (five documents from ranks 101-1000 moved into the top 5), ``random`` (its
1,000 documents in a random order).

With ``--predict shipped`` (or ``oracle``, ``random``), CI also reads a predictions file (docs/predictions.md): the
grades of every unjudged top-10 document of the scenario's runs and of 200 judged documents (stratified by grade,
seeded), predicted by the shipped predictor (``pytest_bvtest.predictor``: the nearest judged documents by their ranks
in the scenario's real runs, these collections having no texts), by the fuller qrels (``oracle``) or at random. A
third table gives the predictor's agreement with people on the judged sample; compare the first table with and
without ``--predict``: false greens and false reds must not grow.

From the repository root (about 10 minutes on one core with the draws on)::

    python -m benchmarks.bench_judgments
    python -m benchmarks.bench_judgments --scenario dl19 --judgments "{discount: 0.5}"
    python -m benchmarks.bench_judgments --scenario dl19 --predict shipped
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import os
import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pytest_bvtest.cli import main as bvtest
from pytest_bvtest.io.predictions import read_documents
from pytest_bvtest.io.qrels import read_qrels
from pytest_bvtest.io.runs import read_run
from pytest_bvtest.judging.pipeline import evaluate_spec
from pytest_bvtest.judging.predictions import predicted_grades
from pytest_bvtest.predictor import predict
from pytest_bvtest.spec.reader import load_spec
from pytest_bvtest.stats.predictions import stratified_sample

SEED = 20261128
SHARED_DATA = Path(os.environ.get("BVTEST_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
QRELS = SHARED_DATA / "anserini_tools_qrels_topics" / "qrels"

GATES = """\
gates:
  - {statistic: trisk, false_alarm: 0.05}
  - {statistic: var, max_increase: 10%, false_alarm: 0.05}
  - {statistic: bias2_plus_var, max_increase: 10%, false_alarm: 0.05}
  - {statistic: mean, max_decrease: 0.01, false_alarm: 0.05}
"""
#: The clearly worse candidates made from a reference.
HARMS = ("shuffle", "deep5", "random")


@dataclass(frozen=True)
class Change:
    """A candidate against a reference; ``others`` are the spec's remaining baselines; ``harm`` names how a clearly
    worse candidate was made (``None``: a real run)."""

    candidate: str
    reference: str
    others: tuple[str, ...]
    harm: str | None = None

    @property
    def label(self) -> str:
        return f"{self.candidate} vs {self.reference}"


@dataclass
class Scenario:
    name: str
    partial: Path
    fuller: Path
    runs: dict[str, Path]
    changes: list[Change] = field(default_factory=list)
    #: The documents' texts (docno to text), where the collection has them: what the shipped predictor compares.
    texts: Path | None = None


@dataclass
class Outcome:
    change: Change
    ci_passed: bool
    truth_passed: bool
    gates: int
    undecided: int
    outcomes: dict[str, str]
    truth: dict[str, bool]
    seconds: float
    #: Per gate: whether it passes as judged on the partial qrels, and P where it was weighed over gradings.
    as_judged: dict[str, bool] = field(default_factory=dict)
    probability: dict[str, float | None] = field(default_factory=dict)
    #: Per gate: its outcome on the fuller qrels with their own unjudged documents weighed (UNDECIDED: even they
    #: cannot tell), and P there where it was weighed.
    truth_outcomes: dict[str, str] = field(default_factory=dict)
    truth_probability: dict[str, float | None] = field(default_factory=dict)
    #: Per weighed gate: the prior's mean chance that one of its unjudged documents is relevant (``None``: not weighed).
    prior_relevant: dict[str, float | None] = field(default_factory=dict)

    @property
    def truth_settled(self) -> bool:
        """Whether the fuller qrels settle the change themselves: a gate that fails on them fails whatever their own
        unjudged documents are (its outcome there ``FAIL``, corners or gradings), or every gate passes on them and
        none is ``UNDECIDED`` there. Else the truth is trec_eval's count of the fuller qrels' unjudged documents as
        non-relevant, which the plugin would call undecided."""
        if not self.truth_passed:
            return any(not passed and self.truth_outcomes[gate] == "FAIL" for gate, passed in self.truth.items())
        return all(outcome in ("OK", "OK*") for outcome in self.truth_outcomes.values())


def trec_eval_order(scores: dict[str, float]) -> list[str]:
    """Docnos by score as a C float, descending, ties by docno descending (docs/mathematics.md §1)."""
    return [docno for _, docno in sorted(((np.float32(score), docno) for docno, score in scores.items()), reverse=True)]


def _rankings(path: Path) -> dict[str, list[str]]:
    return {qid: trec_eval_order(scores) for qid, scores in read_run(path).scores.items()}


def write_run(path: Path, rankings: dict[str, list[str]], tag: str) -> Path:
    with open(path, "w", encoding="utf-8") as out:
        for qid, docnos in rankings.items():
            out.writelines(f"{qid} Q0 {docno} {rank} {1000 - rank} {tag}\n" for rank, docno in enumerate(docnos, 1))
    return path


def harmed(rankings: dict[str, list[str]], harm: str, rng: np.random.Generator) -> dict[str, list[str]]:
    """A clearly worse ranking made from ``rankings`` (see the module's docstring)."""
    out = {}
    topics = sorted(rankings)
    half = set(rng.choice(topics, size=len(topics) // 2, replace=False).tolist())
    for qid in topics:
        docnos = list(rankings[qid])
        if harm == "shuffle" and qid in half:
            top = docnos[:100]
            docnos[:100] = [top[i] for i in rng.permutation(len(top))]
        elif harm == "deep5" and len(docnos) > 105:
            deep = rng.choice(np.arange(100, len(docnos)), size=5, replace=False)
            for rank, at in enumerate(sorted(deep.tolist())):
                docnos[rank], docnos[at] = docnos[at], docnos[rank]
        elif harm == "random":
            docnos = [docnos[i] for i in rng.permutation(len(docnos))]
        out[qid] = docnos
    return out


def pooled(
    qrels: Path, runs: Sequence[Path], depth: int, folder: Path, name: str, judges_all: bool = False
) -> tuple[Path, Path]:
    """The qrels kept to the pairs a pool of ``runs``' top ``depth`` would have judged, and the fuller qrels.

    The fuller qrels may lack some of the pooled documents (DL-HARD's lack 37% of BM25's top 10): they stay unjudged
    in both, and the truth counts them non-relevant. With ``judges_all`` (``--pool-judges-all``) the pool judges all
    it holds, as a real pool does: each one the fuller qrels lack is a grade-0 row in both (the truth unchanged), at
    the price of judged documents nobody read (docs/judgments.md, "DL-HARD: what its fuller qrels cannot settle
    either")."""
    pool = set()
    for path in runs:
        pool.update((qid, docno) for qid, docnos in _rankings(path).items() for docno in docnos[:depth])
    judged = read_qrels(qrels).judgments
    kept = [
        (qid, docno, grade) for qid, grades in judged.items() for docno, grade in grades.items() if (qid, docno) in pool
    ]
    lacking = (
        sorted((qid, docno, 0) for qid, docno in pool if qid in judged and docno not in judged[qid])
        if judges_all
        else []
    )
    partial = folder / f"{name}.qrels"
    partial.write_text("".join(f"{qid} 0 {docno} {grade}\n" for qid, docno, grade in [*kept, *lacking]))
    if not lacking:
        return partial, qrels
    fuller = folder / f"{name}-fuller.qrels"
    every = [(qid, docno, grade) for qid, grades in judged.items() for docno, grade in grades.items()]
    fuller.write_text("".join(f"{qid} 0 {docno} {grade}\n" for qid, docno, grade in [*every, *lacking]))
    return partial, fuller


def sparse(qrels: Path, runs: Sequence[Path], target: Path) -> Path:
    """MS MARCO's convention: per topic one relevant document and no grade-0 row. As MS MARCO's annotators marked a
    passage among a production engine's top 10, the one kept is drawn (with ``SEED``) among the top-graded documents
    some run ranks in its top 10, so that no one run is favoured; else among every top-graded one."""
    rng = np.random.default_rng(SEED)
    shown: dict[str, set[str]] = {}
    for path in runs:
        for qid, docnos in _rankings(path).items():
            shown.setdefault(qid, set()).update(docnos[:10])
    lines = []
    for qid, grades in read_qrels(qrels).judgments.items():
        top = max(grades.values())
        if top > 0:
            best = sorted(docno for docno, grade in grades.items() if grade == top)
            seen = [docno for docno in best if docno in shown.get(qid, set())] or best
            lines.append(f"{qid} 0 {seen[int(rng.integers(len(seen)))]} 1\n")
    target.write_text("".join(lines))
    return target


def merged(paths: Sequence[Path], target: Path) -> Path:
    """Several qrels files as one (a later file's grade wins for a pair judged twice)."""
    judged: dict[tuple[str, str], int] = {}
    for path in paths:
        for qid, grades in read_qrels(path).judgments.items():
            judged.update({(qid, docno): grade for docno, grade in grades.items()})
    target.write_text("".join(f"{qid} 0 {docno} {grade}\n" for (qid, docno), grade in sorted(judged.items())))
    return target


def _distinct(runs: dict[str, Path], preferred: Sequence[str]) -> dict[str, Path]:
    """The runs with one name per ranking, ``preferred`` names first (TREC-COVID's archive holds copies under other
    names)."""
    seen: dict[str, str] = {}
    kept = {}
    for name, path in sorted(runs.items(), key=lambda item: (item[0] not in preferred, item[0])):
        rankings = _rankings(path)
        key = json.dumps({qid: docnos[:100] for qid, docnos in sorted(rankings.items())})
        if key not in seen:
            seen[key] = name
            kept[name] = path
    return kept


def _with_harms(scenario: Scenario, folder: Path, references: Sequence[str], others: tuple[str, ...]) -> None:
    rng = np.random.default_rng(SEED)
    for reference in references:
        rankings = _rankings(scenario.runs[reference])
        for harm in HARMS:
            name = f"{reference}~{harm}"
            scenario.runs[name] = write_run(folder / f"{name}.run", harmed(rankings, harm, rng), name)
            rest = tuple(other for other in others if other != reference)
            scenario.changes.append(Change(name, reference, rest, harm))


def covid(folder: Path) -> Scenario:
    references = ("R4_total_fusion", "FullOHSU")
    runs = _distinct(
        {
            path.name.removesuffix(".txt.gz"): path
            for path in (SHARED_DATA / "trec_covid_ohsu_runs" / "runs" / "Round4_Runs_LessRM3").glob("*.txt.gz")
        },
        references,
    )
    partial = merged([QRELS / f"qrels.covid-round{k}.txt" for k in range(1, 5)], folder / "covid-r1-4.qrels")
    scenario = Scenario("TREC-COVID r4", partial, QRELS / "qrels.covid-complete.txt.gz", runs)
    for reference in references:
        others = tuple(name for name in references if name != reference)
        for candidate in sorted(runs):
            if candidate not in references:
                scenario.changes.append(Change(candidate, reference, others))
    _with_harms(scenario, folder, references, references)
    return scenario


DL19_RUNS = {
    "monot5": "run-msmarco-passage-bm25-monot5-0.8-0.5.txt.gz",
    "colbert": "colbert-on-bm25-trec-dl-queries.gz",
    "drmm": "drmm.res.gz",
    "monobert": "run-msmarco-passage-bm25-monobert-0.8-0.5.txt.gz",
}


def _dl19_runs() -> dict[str, Path]:
    return {name: SHARED_DATA / "dl19_passage_qppeval_runs" / "runs" / file for name, file in DL19_RUNS.items()}


def _every_pair(scenario: Scenario) -> None:
    for reference in sorted(scenario.runs):
        for candidate in sorted(scenario.runs):
            if candidate != reference:
                others = tuple(name for name in sorted(scenario.runs) if name not in (candidate, reference))
                scenario.changes.append(Change(candidate, reference, others))


def dl19(folder: Path, judges_all: bool = False) -> Scenario:
    runs = _dl19_runs()
    full = QRELS / "qrels.dl19-passage.txt"
    partial, fuller = pooled(full, [runs["monot5"], runs["drmm"]], 10, folder, "dl19-pool2", judges_all)
    scenario = Scenario("DL19 pool2", partial, fuller, runs)
    _every_pair(scenario)
    _with_harms(scenario, folder, ("monot5", "colbert"), tuple(runs))
    return scenario


def dl19_sparse(folder: Path) -> Scenario:
    runs = _dl19_runs()
    full = QRELS / "qrels.dl19-passage.txt"
    scenario = Scenario("DL19 sparse", sparse(full, list(runs.values()), folder / "dl19-sparse.qrels"), full, runs)
    _every_pair(scenario)
    _with_harms(scenario, folder, ("monot5", "colbert"), tuple(runs))
    return scenario


EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def example(folder: Path, judges_all: bool = False) -> Scenario:
    """The example project (Python stdlib docs, texts known): qrels kept to the top 5 of production and bm25-alt,
    against its qrels (every top 10 of its five runs judged)."""
    runs = {path.stem: path for path in sorted((EXAMPLE / "runs").glob("*.run"))}
    full = EXAMPLE / "eval" / "qrels.txt"
    partial, fuller = pooled(full, [runs["production"], runs["bm25-alt"]], 5, folder, "example-pool", judges_all)
    scenario = Scenario("example pool5", partial, fuller, runs, texts=EXAMPLE / "corpus" / "stdlib_docs.jsonl")
    _every_pair(scenario)
    _with_harms(scenario, folder, ("production",), tuple(runs))
    return scenario


def dl_hard(folder: Path, judges_all: bool = False) -> Scenario:
    base = SHARED_DATA / "dl_hard" / "dataset"
    runs = {path.name.removesuffix(".run.gz"): path for path in (base / "baselines" / "doc").glob("*.run.gz")}
    full = base / "dl_hard-doc.qrels"
    partial, fuller = pooled(full, [runs["bm25"], runs["bm25+rm3"]], 10, folder, "dl-hard-pool", judges_all)
    scenario = Scenario("DL-HARD pool", partial, fuller, runs)
    references = ("bm25", "bm25+electra-mp")
    for reference in references:
        others = tuple(name for name in references if name != reference)
        for candidate in sorted(runs):
            if candidate not in references:
                scenario.changes.append(Change(candidate, reference, others))
    _with_harms(scenario, folder, references, references)
    return scenario


SCENARIOS = {"covid": covid, "dl19": dl19, "dlhard": dl_hard, "sparse": dl19_sparse, "example": example}
#: The scenarios whose partial qrels are a pool (:func:`pooled`).
POOLED = ("dl19", "dlhard", "example")


def _spec(folder: Path, scenario: Scenario, change: Change, qrels: Path, judgments: str, cache: Path) -> Path:
    baselines = "".join(f"  {json.dumps(name)}: {json.dumps(str(scenario.runs[name]))}\n" for name in change.others)
    reference = f"  {json.dumps(change.reference)}: {json.dumps(str(scenario.runs[change.reference]))}\n"
    spec = folder / "bvtest.yaml"
    spec.write_text(
        f"qrels: {json.dumps(str(qrels))}\nmeasures: [nDCG@10]\nbaselines:\n{reference}{baselines}"
        f"candidate: {{run: {json.dumps(str(scenario.runs[change.candidate]))}, name: candidate}}\n"
        f"reference: {json.dumps(change.reference)}\nanalysis: {{risk_alpha: 1, power: false}}\n"
        f"cache: {json.dumps(str(cache))}\n" + (f"judgments: {judgments}\n" if judgments else "") + GATES
    )
    return spec


def judge(scenario: Scenario, change: Change, folder: Path, judgments: str, cache: Path) -> Outcome:
    """``bvtest check`` on the partial qrels, and the gates as judged on the fuller ones."""
    started = time.perf_counter()
    spec = _spec(folder, scenario, change, scenario.partial, judgments, cache)
    report = folder / "report.json"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()) as errors:
        code = bvtest(["check", str(spec), "--json", str(report), "--allow-outside-project"])
    if code not in (0, 1):
        raise SystemExit(f"{scenario.name}, {change.label}: bvtest check exited {code}: {errors.getvalue()}")
    document = json.loads(report.read_text())
    gates = [gate for evaluation in document["evaluations"] for gate in evaluation["gates"]]
    outcomes = {gate["statistic"]: gate["outcome"] for gate in gates}
    fuller = _spec(folder, scenario, change, scenario.fuller, "", cache)
    verdicts = evaluate_spec(load_spec(fuller), allow_outside=True).gates
    truth = {verdict.statistic: verdict.passed_as_judged for verdict in verdicts}
    return Outcome(
        change,
        code == 0,
        all(truth.values()),
        len(gates),
        sum(outcome == "UNDECIDED" for outcome in outcomes.values()),
        outcomes,
        truth,
        time.perf_counter() - started,
        {gate["statistic"]: gate.get("judgments", {}).get("as_judged", gate["passed"]) for gate in gates},
        {
            gate["statistic"]: ((gate.get("judgments") or {}).get("plausible") or {}).get("probability")
            for gate in gates
        },
        {verdict.statistic: verdict.outcome for verdict in verdicts},
        {
            verdict.statistic: None if verdict.plausible is None else verdict.plausible.probability
            for verdict in verdicts
        },
        {gate["statistic"]: ((gate.get("judgments") or {}).get("plausible") or {}).get("relevant") for gate in gates},
    )


def own_unjudged(scenario: Scenario, change: Change) -> dict[str, tuple[int, float]]:
    """The prior's calibration side by side: of the candidate's own unjudged top-10 documents (in its top 10, not in
    the reference's, unjudged by the partial qrels) and of the reference's own, how many, and the share the fuller
    qrels grade relevant (a document they lack counts non-relevant, as their truth counts it)."""
    partial, fuller = read_qrels(scenario.partial).judgments, read_qrels(scenario.fuller).judgments
    tops = {name: _top10(scenario.runs[name]) for name in (change.candidate, change.reference)}
    found = {}
    for side, (own, other) in {
        "candidate": (tops[change.candidate], tops[change.reference]),
        "reference": (tops[change.reference], tops[change.candidate]),
    }.items():
        grades = [
            fuller.get(qid, {}).get(docno, 0)
            for qid, docnos in own.items()
            if qid in partial
            for docno in docnos
            if docno not in partial[qid] and docno not in other.get(qid, [])
        ]
        found[side] = (len(grades), float(np.mean([grade > 0 for grade in grades])) if grades else float("nan"))
    return found


def predictions(scenario: Scenario, folder: Path, mode: str) -> tuple[Path, dict[str, object]]:
    """A predictions file for ``scenario``: every unjudged top-10 document of its runs and 200 judged ones (stratified
    by grade), graded by ``mode`` (``shipped``, ``oracle``, ``random``); and its agreement with people."""
    partial, fuller = read_qrels(scenario.partial).judgments, read_qrels(scenario.fuller).judgments
    unjudged = sorted(
        {
            (qid, docno)
            for path in scenario.runs.values()
            for qid, docnos in _top10(path).items()
            if qid in partial
            for docno in docnos
            if docno not in partial[qid]
        }
    )
    judged = sorted((qid, docno, grade) for qid, grades in partial.items() for docno, grade in grades.items())
    sample = [judged[k][:2] for k in stratified_sample([grade for *_, grade in judged], 200, SEED)]
    pairs = sorted(set(unjudged) | set(sample))
    top = max(max(grades.values()) for grades in partial.values())
    if mode == "shipped":
        real = sorted(
            {
                str(scenario.runs[name])
                for change in scenario.changes
                if change.harm is None
                for name in (change.candidate, change.reference)
            }
        )
        texts = None if scenario.texts is None else read_documents(scenario.texts)
        # by text where the collection has texts, else by the ranks of its real runs
        grades = predict([(qid, docno, "") for qid, docno in pairs], partial, texts, [] if texts else real)
    elif mode == "oracle":
        grades = [min(top, max(0, fuller.get(qid, {}).get(docno, 0))) for qid, docno in pairs]
    else:
        grades = np.random.default_rng(SEED).integers(0, top + 1, size=len(pairs)).tolist()
    path = folder / f"predicted-{mode}.tsv"
    path.write_text(
        "topic\tdocno\tpredicted\n" + "".join(f"{q}\t{d}\t{g}\n" for (q, d), g in zip(pairs, grades) if g is not None)
    )
    measured = predicted_grades(path, read_qrels(scenario.partial), top)
    return path, {
        "predicted": len(measured.grades),
        "sample": measured.sample,
        "agreement": measured.agreement,
        "kappa": measured.kappa,
        "trust": measured.trust,
    }


def _with_predictions(judgments: str, path: Path) -> str:
    """The specs' ``judgments:`` section with ``predictions:`` added."""
    inner = judgments.strip().removeprefix("{").removesuffix("}").strip()
    return "{" + ", ".join(part for part in (inner, f"predictions: {json.dumps(str(path))}") if part) + "}"


def _top10(path: Path) -> dict[str, list[str]]:
    return {qid: docnos[:10] for qid, docnos in _rankings(path).items()}


def relevance_of_unjudged(scenario: Scenario) -> dict[str, float]:
    """What the fuller qrels say of the partial qrels' judged and unjudged top-10 documents of the real changes'
    candidates and references, each (topic, document) once."""
    partial, fuller = read_qrels(scenario.partial).judgments, read_qrels(scenario.fuller).judgments
    top = max(grade for grades in fuller.values() for grade in grades.values())
    real = [change for change in scenario.changes if change.harm is None]
    names = {name for change in real for name in (change.candidate, change.reference)}
    pairs = {(qid, docno) for name in names for qid, docnos in _top10(scenario.runs[name]).items() for docno in docnos}
    pairs = {(qid, docno) for qid, docno in pairs if qid in partial}
    unjudged = [fuller.get(qid, {}).get(docno) for qid, docno in pairs if docno not in partial[qid]]
    judged = [fuller.get(qid, {}).get(docno, 0) for qid, docno in pairs if docno in partial[qid]]

    def share(grades: list[int | None], test) -> float:
        return float(np.mean([grade is not None and test(grade) for grade in grades])) if grades else float("nan")

    return {
        "unjudged": len(unjudged),
        "unjudged judged by fuller": share(unjudged, lambda grade: True),
        "unjudged relevant": share(unjudged, lambda grade: grade > 0),
        "unjudged top grade": share(unjudged, lambda grade: grade == top),
        "judged": len(judged),
        "judged relevant": share(judged, lambda grade: grade > 0),
        "judged top grade": share(judged, lambda grade: grade == top),
    }


def _table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    lines = ["| " + " | ".join(headers) + " |", "| " + " | ".join("---" for _ in headers) + " |"]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def _rate(count: int, total: int) -> str:
    return f"{count}/{total} ({count / total:.0%})" if total else "0/0"


def summary_rows(results: dict[str, list[Outcome]]) -> Iterator[list[object]]:
    every: list[Outcome] = []
    for name, outcomes in [*results.items(), ("all", [])]:
        if name == "all":
            outcomes = every
        else:
            every += outcomes
        failing = [outcome for outcome in outcomes if not outcome.truth_passed]
        passing = [outcome for outcome in outcomes if outcome.truth_passed]
        settled_failing = [outcome for outcome in failing if outcome.truth_settled]
        settled_passing = [outcome for outcome in passing if outcome.truth_settled]
        worse = [outcome for outcome in outcomes if outcome.change.harm is not None]
        gates = sum(outcome.gates for outcome in outcomes)
        # the weighed gates the gradings decided, and those whose side the fuller qrels do not take
        decided = [
            (outcome, gate, probability >= 0.95)
            for outcome in outcomes
            for gate, probability in outcome.probability.items()
            if probability is not None and not 0.05 < probability < 0.95
        ]
        wrong = sum(passed != outcome.truth[gate] for outcome, gate, passed in decided)
        # and among those the fuller qrels settle themselves, by the side they settle them on
        settled = [
            passed != (outcome.truth_outcomes[gate] in ("OK", "OK*"))
            for outcome, gate, passed in decided
            if outcome.truth_outcomes[gate] != "UNDECIDED"
        ]
        yield [
            name,
            len(outcomes),
            len(failing),
            _rate(sum(outcome.ci_passed for outcome in failing), len(failing)),
            _rate(sum(not outcome.ci_passed for outcome in passing), len(passing)),
            sum(not outcome.truth_settled for outcome in outcomes),
            _rate(sum(outcome.ci_passed for outcome in settled_failing), len(settled_failing)),
            _rate(sum(not outcome.ci_passed for outcome in settled_passing), len(settled_passing)),
            _rate(sum(outcome.undecided for outcome in outcomes), gates),
            _rate(sum(not outcome.ci_passed for outcome in worse), len(worse)),
            _rate(wrong, len(decided)),
            _rate(sum(settled), len(settled)),
            f"{sum(outcome.seconds for outcome in outcomes):.0f}",
        ]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--scenario", action="append", choices=sorted(SCENARIOS), help="(repeatable; default: all)")
    parser.add_argument("--judgments", default="", help="the specs' `judgments:` section, as YAML (default: none)")
    parser.add_argument("--details", action="store_true", help="print every change's outcomes")
    parser.add_argument("--save", type=Path, help="write every change's gates (outcomes, P, truth) here as JSON")
    parser.add_argument(
        "--predict",
        choices=("shipped", "oracle", "random"),
        help="CI also reads predicted grades (docs/predictions.md)",
    )
    parser.add_argument(
        "--pool-judges-all",
        action="store_true",
        help="a pool judges every document it holds; those the fuller qrels lack as grade 0 in both (see pooled)",
    )
    arguments = parser.parse_args(argv)
    if not SHARED_DATA.is_dir():
        raise SystemExit(f"needs the shared data at {SHARED_DATA} (or BVTEST_SHARED_DATA)")
    results: dict[str, list[Outcome]] = {}
    relevance: dict[str, dict[str, float]] = {}
    agreement: dict[str, dict[str, object]] = {}
    with tempfile.TemporaryDirectory(prefix="bench-judgments-") as scratch:
        root = Path(scratch)
        cache = root / "cache"
        for key in arguments.scenario or list(SCENARIOS):
            folder = root / key
            folder.mkdir()
            scenario = SCENARIOS[key](folder, arguments.pool_judges_all) if key in POOLED else SCENARIOS[key](folder)
            relevance[scenario.name] = relevance_of_unjudged(scenario)
            judgments = arguments.judgments
            if arguments.predict:
                path, agreement[scenario.name] = predictions(scenario, folder, arguments.predict)
                judgments = _with_predictions(judgments, path)
            results[scenario.name] = [judge(scenario, change, folder, judgments, cache) for change in scenario.changes]
            if arguments.details:
                for outcome in results[scenario.name]:
                    truth = "pass" if outcome.truth_passed else "FAIL"
                    ci = "pass" if outcome.ci_passed else "FAIL"
                    settled = "" if outcome.truth_settled else " (fuller qrels undecided)"
                    label = f"{scenario.name:14} {outcome.change.label:48}"
                    print(f"{label} fuller {truth}{settled} ci {ci} {outcome.outcomes}")
                    if outcome.prior_relevant.get("mean") is not None:
                        own = own_unjudged(scenario, outcome.change)
                        weighed = f"P {outcome.probability['mean']:.0%}, prior {outcome.prior_relevant['mean']:.0%}"
                        print(
                            f"{'':63} mean: {weighed} relevant; own unjudged relevant by the fuller qrels: candidate "
                            f"{own['candidate'][1]:.0%} of {own['candidate'][0]}, reference {own['reference'][1]:.0%} "
                            f"of {own['reference'][0]}"
                        )
    if arguments.save:
        arguments.save.write_text(
            json.dumps(
                {
                    name: [
                        {
                            "change": outcome.change.label,
                            "harm": outcome.change.harm,
                            "ci_passed": outcome.ci_passed,
                            "truth_passed": outcome.truth_passed,
                            "truth_settled": outcome.truth_settled,
                            "outcomes": outcome.outcomes,
                            "truth": outcome.truth,
                            "as_judged": outcome.as_judged,
                            "probability": outcome.probability,
                            "truth_outcomes": outcome.truth_outcomes,
                            "truth_probability": outcome.truth_probability,
                            "prior_relevant": outcome.prior_relevant,
                            "seconds": outcome.seconds,
                        }
                        for outcome in outcomes
                    ]
                    for name, outcomes in results.items()
                },
                indent=1,
            )
        )
    predicted = f"; predictions: {arguments.predict}" if arguments.predict else ""
    print(
        f"judgments: {arguments.judgments or '(defaults)'}{predicted}; gates: the README's four on nDCG@10; "
        f"seed {SEED}\n"
    )
    print(
        _table(
            [
                "scenario",
                "changes",
                "fuller qrels fail",
                "false greens",
                "false reds",
                "fuller qrels undecided",
                "false greens, settled",
                "false reds, settled",
                "gates undecided",
                "clearly worse red",
                "decided wrongly",
                "decided wrongly, settled",
                "s",
            ],
            list(summary_rows(results)),
        )
    )
    print()
    keys = list(next(iter(relevance.values())))
    print(
        _table(
            ["scenario", *keys],
            [
                [name, *(f"{value:.0%}" if isinstance(value, float) else value for value in values.values())]
                for name, values in relevance.items()
            ],
        )
    )
    if agreement:
        print()
        print(
            _table(
                ["scenario", "predicted unjudged", "judged sample", "agreement", "kappa", "trusted at"],
                [
                    [
                        name,
                        values["predicted"],
                        values["sample"],
                        "-" if values["agreement"] is None else f"{values['agreement']:.0%}",
                        "-" if values["kappa"] is None else f"{values['kappa']:.2f}",
                        f"{values['trust']:.2f}",
                    ]
                    for name, values in agreement.items()
                ],
            )
        )


if __name__ == "__main__":
    main()
