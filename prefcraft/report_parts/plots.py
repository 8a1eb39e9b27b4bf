"""The report's figures as PNG bytes, drawn with matplotlib's object API (Agg; no pyplot state, no display)."""

from __future__ import annotations

import io
import math
import textwrap

from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from prefcraft.report_parts.blocks import EstimateRow

WIDTH = 7.5
BASELINE_COLOR, METHOD_COLOR, POINT_COLOR = "#8c8c8c", "#1f5fa8", "#e07b1a"


def estimate_chart(rows: list[EstimateRow], *, title: str, axis: str) -> bytes:
    """A row per estimate: the mean (diamond), its interval (whiskers) and the values it averages (dots)."""
    figure = Figure(figsize=(WIDTH, 1.2 + 0.5 * len(rows)))
    ax = figure.subplots()
    for y, row in enumerate(reversed(rows)):
        color = BASELINE_COLOR if row.baseline else METHOD_COLOR
        if row.points:
            offsets = [0.18 * ((index % 5) - 2) / 2 for index in range(len(row.points))]
            ax.scatter(row.points, [y + offset for offset in offsets], s=14, color=POINT_COLOR, alpha=0.7, zorder=2)
        if not (math.isnan(row.low) or math.isnan(row.high)):
            ax.errorbar([row.mean], [y], xerr=[[row.mean - row.low], [row.high - row.mean]], fmt="none",
                        ecolor=color, capsize=4, linewidth=1.5, zorder=3)
        ax.scatter([row.mean], [y], marker="D", s=40, color=color, zorder=4)
    ax.set_yticks(range(len(rows)), [row.label for row in reversed(rows)])
    ax.set_ylim(-0.6, len(rows) - 0.4)
    ax.set_xlabel(axis)
    ax.grid(axis="x", alpha=0.3)
    return _png(figure, title)


def line_chart(series: dict[str, list[tuple[float, float]]], *, title: str, xlabel: str, ylabel: str,
               levels: dict[str, float] | None = None) -> bytes:
    """Lines of (x, y) points; `levels` are dashed horizontal references (an uncompiled program's score)."""
    figure = Figure(figsize=(WIDTH, 3.4))
    ax = figure.subplots()
    for name, points in series.items():
        ax.plot([x for x, _ in points], [y for _, y in points], marker="o", markersize=4, label=name)
    for name, level in (levels or {}).items():
        ax.axhline(level, linestyle="--", linewidth=1, color=BASELINE_COLOR if "uncompiled" in name else "#2a9d55",
                   label=name)
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(alpha=0.3)
    ax.legend(fontsize="small")
    return _png(figure, title)


def grouped_bars(groups: dict[str, dict[str, float]], *, title: str, ylabel: str) -> bytes:
    """One cluster of bars per group (a task), one bar per series (a condition); a missing value leaves a gap."""
    series = list(dict.fromkeys(name for values in groups.values() for name in values))
    width = 0.8 / max(len(series), 1)
    figure = Figure(figsize=(WIDTH, 3.4))
    ax = figure.subplots()
    for number, name in enumerate(series):
        xs = [index + (number - (len(series) - 1) / 2) * width for index in range(len(groups))]
        values = [values.get(name, math.nan) for values in groups.values()]
        ax.bar(xs, values, width=width, label=name)
    ax.set_xticks(range(len(groups)), list(groups))
    ax.set_ylabel(ylabel)
    ax.axhline(0, color="black", linewidth=0.6)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize="small")
    return _png(figure, title)


def bar_panels(panels: dict[str, dict[str, float]], *, title: str) -> bytes:
    """Side-by-side horizontal bar charts over the same labels, one per quantity (each on its own scale)."""
    labels = list(dict.fromkeys(label for values in panels.values() for label in values))
    figure = Figure(figsize=(WIDTH + 2, 1.2 + 0.4 * len(labels)))
    axes = figure.subplots(1, len(panels), sharey=True, squeeze=False)[0]
    for ax, (name, values) in zip(axes, panels.items(), strict=True):
        ax.barh(range(len(labels)), [values.get(label, math.nan) for label in labels], color=METHOD_COLOR)
        ax.set_title(name, fontsize="medium")
        ax.grid(axis="x", alpha=0.3)
    axes[0].set_yticks(range(len(labels)), labels)
    axes[0].invert_yaxis()
    return _png(figure, title)


def _png(figure: Figure, title: str) -> bytes:
    figure.suptitle(textwrap.fill(title, 100), fontsize="medium")  # a sweep's trial names its values: long
    figure.tight_layout()
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
