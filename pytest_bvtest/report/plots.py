"""Bias-variance plots per (spec, measure), PNG, from the session document.

Per measure: Bias², Var and Bias²+Var per system with the systems sorted by Bias² (the style of IPM
2022 Figure 1; markers, not lines, and the gates' limits on those statistics as dashed lines), Bias²
against Var with the tradeoff correlation (CIKM 2014 Table 2) in the title; the per-topic difference
plot (candidate minus reference, sorted) when there are both; the MVE alpha sweep when the spec asks
for one (Zuccon et al. CIKM 2016 Figs. 2-4: value and rank of each system against alpha). The
candidate and the reference are marked. matplotlib is the optional ``plots`` extra and is imported
only in :func:`write_plots`; the HTML report draws the same pictures without it
(:mod:`pytest_bvtest.report.svg`).
"""

from __future__ import annotations

import hashlib
import io
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_bvtest.errors import InputError
from pytest_bvtest.io.textfiles import atomic_write_bytes
from pytest_bvtest.report.wording import display_path, format_number, limit_cell
from pytest_bvtest.stats.registry import PLOT_SERIES, STATISTICS

ROLE_STYLES = {
    "candidate": {"color": "#d62728", "marker": "*", "linestyle": "--"},
    "reference": {"color": "#9467bd", "marker": "D", "linestyle": ":"},
}
#: ``(statistic, label, marker)`` of the bias-variance plot, from the catalogue's ``plot_marker``.
SERIES = PLOT_SERIES
#: One colour per entry of :data:`SERIES` (the catalogue's ``plot_color``), in the PNG and the HTML plots;
#: a gate's limit on that statistic is drawn in its colour.
SERIES_COLORS = tuple(STATISTICS[key].plot_color for key, _, _ in SERIES)
#: The per-topic difference plot's colours: the candidate better, worse, equal.
GAIN_COLOR, LOSS_COLOR, TIE_COLOR = "#2e7d32", "#c62828", "#757575"

# Beyond this many systems only the candidate's and the reference's names stay on the x axis.
_MAX_TICK_LABELS = 40
# Beyond this many systems only the candidate and the reference are named in the scatter plot.
_MAX_POINT_LABELS = 12
_DPI = 100


#: The longest slug: a file name holds at most 255 bytes, and a slug is one part of one (a 287-character gate name
#: made `bvtest history --plot` fail with "File name too long").
MAX_SLUG = 100


def slug(text: str, *, distinct: bool = False) -> str:
    """``text`` as a file-name part: runs of other characters than letters, digits and dots become ``-``; longer
    than :data:`MAX_SLUG`, cut and followed by a digest of the whole text, as it is with ``distinct`` (two texts
    that differ only in what the slug drops, ``a b`` and ``a-b``, get two names)."""
    plain = re.sub(r"[^A-Za-z0-9.]+", "-", text).strip("-") or "x"
    if len(plain) <= MAX_SLUG and not distinct:
        return plain
    digest = hashlib.blake2b(text.encode("utf-8"), digest_size=6).hexdigest()
    return f"{plain[:MAX_SLUG].rstrip('-')}-{digest}"


def file_prefixes(specs: Iterable[str]) -> dict[str, str]:
    """A file-name prefix per spec path: its stem, or its slugged relative path where stems collide."""
    specs = list(dict.fromkeys(specs))
    stems = [Path(spec).stem for spec in specs]
    return {
        spec: slug(stem) if stems.count(stem) == 1 else slug(str(Path(display_path(spec)).with_suffix("")))
        for spec, stem in zip(specs, stems)
    }


def _plotted_systems(evaluation: Mapping[str, Any]) -> tuple[list[Mapping[str, Any]], int]:
    """Systems with all three terms, sorted by Bias² (ties in document order), and how many lack one."""
    complete = [system for system in evaluation["systems"] if all(system[key] is not None for key, _, _ in SERIES)]
    return sorted(complete, key=lambda system: system["bias2"]), len(evaluation["systems"]) - len(complete)


def _omitted_note(omitted: int) -> str:
    return f" ({omitted} systems without Bias²/Var not shown)" if omitted else ""


def _role_legend_label(system: Mapping[str, Any]) -> str:
    return f"{system['role']}: {system['name']}"


def topic_differences(evaluation: Mapping[str, Any]) -> list[tuple[str, float]] | None:
    """Candidate minus reference per topic, largest gain first (ties in topic order); ``None`` without
    a candidate and a reference with per-topic scores."""
    by_role = {system["role"]: system for system in evaluation["systems"] if system.get("per_topic") is not None}
    if "candidate" not in by_role or "reference" not in by_role:
        return None
    pairs = zip(evaluation["topics"], by_role["candidate"]["per_topic"], by_role["reference"]["per_topic"])
    return sorted(((topic, float(ours) - float(theirs)) for topic, ours, theirs in pairs), key=lambda pair: -pair[1])


def limit_lines(evaluation: Mapping[str, Any]) -> list[tuple[str, float, str]]:
    """The limits of the gates on a statistic of :data:`SERIES`: (label, limit, the statistic's colour)."""
    colors = {key: color for (key, _, _), color in zip(SERIES, SERIES_COLORS)}
    return [
        (
            f"{gate.get('label') or gate['statistic']} limit {limit_cell(gate)} ({gate['rule']})",
            float(gate["limit"]),
            colors[gate["statistic"]],
        )
        for gate in evaluation["gates"]
        if gate["statistic"] in colors and gate["limit"] is not None and math.isfinite(float(gate["limit"]))
    ]


def _bias_variance_figure(figure_class: Any, evaluation: Mapping[str, Any]) -> Any:
    systems, omitted = _plotted_systems(evaluation)
    count = len(systems)
    figure = figure_class(figsize=(min(16.0, max(6.4, 3.0 + 0.16 * count) + 3.2), 4.8), layout="constrained")
    axes = figure.add_subplot()
    positions = range(count)
    marker_size = 6 if count <= _MAX_TICK_LABELS else 3
    # markers only: the systems are categories, a line between them would suggest a continuum
    for (key, label, marker), color in zip(SERIES, SERIES_COLORS):
        axes.plot(
            positions,
            [system[key] for system in systems],
            marker=marker,
            markersize=marker_size,
            linestyle="none",
            color=color,
            label=label,
        )
    for label, limit, color in limit_lines(evaluation):
        axes.axhline(limit, color=color, linestyle="--", linewidth=1.2, label=label)
    marked = [(position, system) for position, system in enumerate(systems) if system["role"] in ROLE_STYLES]
    for position, system in marked:
        style = ROLE_STYLES[system["role"]]
        axes.axvline(
            position,
            color=style["color"],
            linestyle=style["linestyle"],
            linewidth=1.5,
            label=_role_legend_label(system),
        )
    shown = list(enumerate(systems)) if count <= _MAX_TICK_LABELS else marked
    axes.set_xticks(
        [position for position, _ in shown],
        [system["name"] for _, system in shown],
        rotation=60,
        ha="right",
        fontsize=8,
    )
    for tick, (_, system) in zip(axes.get_xticklabels(), shown):
        if system["role"] in ROLE_STYLES:
            tick.set_color(ROLE_STYLES[system["role"]]["color"])
            tick.set_fontweight("bold")
    axes.set_xlim(-0.5, max(count - 0.5, 0.5))
    axes.set_ylim(bottom=0)
    axes.set_xlabel(f"systems sorted by Bias² ({count}){_omitted_note(omitted)}")
    axes.set_ylabel(f"squared error ({evaluation['measure']} units²)")
    axes.set_title(
        f"{evaluation['measure']}: bias-variance per system, target c = {format_number(evaluation['target']['c'])}\n"
        f"{display_path(evaluation['spec'])}, {len(evaluation['topics'])} topics",
        fontsize=10,
    )
    axes.grid(axis="y", alpha=0.3)
    # beside the axes: inside, the limits' long labels would hide points
    axes.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return figure


def _scatter_figure(figure_class: Any, evaluation: Mapping[str, Any]) -> Any:
    systems, omitted = _plotted_systems(evaluation)
    figure = figure_class(figsize=(6.4, 5.2), layout="constrained")
    axes = figure.add_subplot()
    others = [system for system in systems if system["role"] not in ROLE_STYLES]
    axes.scatter(
        [s["bias2"] for s in others],
        [s["var"] for s in others],
        s=18,
        color="0.55",
        alpha=0.8,
        label="baselines",
        zorder=2,
    )
    for system in systems:
        style = ROLE_STYLES.get(system["role"])
        if style is not None:
            axes.scatter(
                [system["bias2"]],
                [system["var"]],
                s=150,
                color=style["color"],
                marker=style["marker"],
                edgecolor="black",
                linewidth=0.6,
                label=_role_legend_label(system),
                zorder=3,
            )
        if style is not None or len(systems) <= _MAX_POINT_LABELS:
            axes.annotate(
                system["name"],
                (system["bias2"], system["var"]),
                xytext=(5, 5),
                textcoords="offset points",
                fontsize=8,
                color=style["color"] if style else "0.3",
                fontweight="bold" if style else "normal",
            )
    tradeoff = evaluation["tradeoff"]
    axes.set_title(
        f"{evaluation['measure']}: Bias² vs Var, {len(systems)} systems{_omitted_note(omitted)}\n"
        f"tradeoff: Pearson r = {format_number(tradeoff['pearson'], 3)}, Spearman ρ = "
        f"{format_number(tradeoff['spearman'], 3)}",
        fontsize=10,
    )
    # Room for the names of the outermost points; from 0, where the best (lowest) values are.
    axes.margins(0.12)
    axes.set_xlim(left=0)
    axes.set_ylim(bottom=0)
    axes.annotate(
        "lower-left is better",
        xy=(0.0, 0.0),
        xycoords="axes fraction",
        xytext=(0.1, 0.1),
        textcoords="axes fraction",
        color=GAIN_COLOR,
        fontsize=9,
        fontstyle="italic",
        arrowprops={"arrowstyle": "->", "color": GAIN_COLOR},
    )
    axes.set_xlabel("Bias²")
    axes.set_ylabel("Var")
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8, loc="best")
    return figure


def _difference_figure(figure_class: Any, evaluation: Mapping[str, Any]) -> Any | None:
    """Candidate minus reference per topic, sorted: the per-topic difference plot of IR papers."""
    pairs = topic_differences(evaluation)
    if pairs is None:
        return None
    values = [value for _, value in pairs]
    figure = figure_class(figsize=(max(6.4, min(16.0, 3.0 + 0.12 * len(values))), 4.2), layout="constrained")
    axes = figure.add_subplot()
    colors = [GAIN_COLOR if value > 0 else LOSS_COLOR if value < 0 else TIE_COLOR for value in values]
    axes.bar(range(len(values)), values, width=0.8, color=colors)
    axes.axhline(0, color="black", linewidth=0.8)
    if len(values) <= _MAX_TICK_LABELS:
        axes.set_xticks(range(len(values)), [topic for topic, _ in pairs], rotation=90, fontsize=7)
    else:
        axes.set_xticks([])
    better, worse = sum(value > 0 for value in values), sum(value < 0 for value in values)
    axes.set_xlabel(
        f"{len(values)} topics, largest gain first: better on {better}, worse on {worse}, "
        f"equal on {len(values) - better - worse}"
    )
    axes.set_ylabel(f"Δ {evaluation['measure']}")
    axes.set_title(
        f"{evaluation['measure']}: {evaluation['candidate']} − {evaluation['reference']} per topic\n"
        f"{display_path(evaluation['spec'])}",
        fontsize=10,
    )
    axes.grid(axis="y", alpha=0.3)
    return figure


def _mve_sweep_figure(figure_class: Any, evaluation: Mapping[str, Any]) -> Any:
    """MVE value (top) and rank (bottom) of each system against alpha, Zuccon et al. CIKM 2016 Figs. 2-4."""
    mve = evaluation["mve"]
    sweep = mve["sweep"]
    alphas = [float(alpha) for alpha in sweep["alphas"]]
    figure = figure_class(figsize=(7.2, 6.4), layout="constrained")
    value_axes, rank_axes = figure.subplots(2, 1, sharex=True)
    named = len(evaluation["systems"]) <= _MAX_POINT_LABELS
    for i, system in enumerate(evaluation["systems"]):
        style = ROLE_STYLES.get(system["role"], {"color": "0.6", "marker": "", "linestyle": "-"})
        label = _role_legend_label(system) if system["role"] in ROLE_STYLES else (system["name"] if named else None)
        values = [float(row[i]) for row in sweep["values"]]
        ranks = [float(row[i]) for row in sweep["ranks"]]
        width = 2.0 if system["role"] in ROLE_STYLES else 1.0
        value_axes.plot(
            alphas, values, color=style["color"], linestyle=style["linestyle"], linewidth=width, label=label
        )
        rank_axes.plot(
            alphas, ranks, color=style["color"], linestyle=style["linestyle"], linewidth=width, drawstyle="steps-mid"
        )
    flip = sweep["flips"].get(evaluation.get("reference") or "")
    if flip is not None and alphas[0] <= float(flip) <= alphas[-1]:
        for axes in (value_axes, rank_axes):
            axes.axvline(float(flip), color="black", linewidth=0.8, linestyle=":")
    value_axes.set_title(f"{evaluation['measure']}: MVE ({mve['form']}) against the risk preference alpha", fontsize=10)
    value_axes.set_ylabel("MVE value mu - alpha sigma²")
    rank_axes.set_ylabel("rank (1 = best)")
    rank_axes.invert_yaxis()
    rank_axes.set_xlabel("alpha (negative: risk seeking, positive: risk averse)")
    for axes in (value_axes, rank_axes):
        axes.grid(alpha=0.3)
    value_axes.legend(fontsize=8, loc="best")
    return figure


def _write_png(figure: Any, canvas_class: Any, path: Path) -> Path:
    canvas_class(figure)
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=_DPI)
    atomic_write_bytes(path, buffer.getvalue())
    return path


def write_plots(document: Mapping[str, Any], folder: Path) -> list[Path]:
    """Write ``<spec-stem>-<measure-slug>-bias-variance.png``, ``...-scatter.png``, with a candidate
    and a reference ``...-difference.png`` and, with an MVE alpha sweep, ``...-mve-sweep.png`` per
    (spec, measure).

    Returns the paths written, in document order. Raises :class:`InputError` when matplotlib is not
    installed.
    """
    try:
        # The Agg canvas on a bare Figure renders without pyplot, so the user's global backend and
        # figure registry are left alone.
        from matplotlib import rc_context
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        raise InputError(
            "plots need matplotlib, which is not installed",
            hint="pip install matplotlib (the plots extra of pytest-bvtest)",
        ) from None
    folder = Path(folder)
    evaluations: Sequence[Mapping[str, Any]] = document["evaluations"]
    prefixes = file_prefixes(evaluation["spec"] for evaluation in evaluations)
    written = []
    # a name is drawn as written: matplotlib read `$...$` in it as mathematics (`new $\\x$` raised a ValueError)
    with rc_context({"text.parse_math": False}):
        for evaluation in evaluations:
            stem = f"{prefixes[evaluation['spec']]}-{slug(evaluation['measure'])}"
            written.append(
                _write_png(
                    _bias_variance_figure(Figure, evaluation), FigureCanvasAgg, folder / f"{stem}-bias-variance.png"
                )
            )
            written.append(
                _write_png(_scatter_figure(Figure, evaluation), FigureCanvasAgg, folder / f"{stem}-scatter.png")
            )
            difference = _difference_figure(Figure, evaluation)
            if difference is not None:
                written.append(_write_png(difference, FigureCanvasAgg, folder / f"{stem}-difference.png"))
            if (evaluation.get("mve") or {}).get("sweep"):
                written.append(
                    _write_png(_mve_sweep_figure(Figure, evaluation), FigureCanvasAgg, folder / f"{stem}-mve-sweep.png")
                )
    return written
