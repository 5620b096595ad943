"""Small inline SVG charts, drawn on the server (no script, nothing fetched).

Labels are escaped here: the markup these functions return goes into the page as is.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from datetime import UTC, datetime

PALETTE = ("#2f6fb0", "#d9822b", "#3a9a5b", "#b04a4a", "#7a5cb0", "#6b6b6b")
WIDTH, HEIGHT = 720, 220
LEFT, RIGHT, TOP, BOTTOM = 64, 12, 14, 34


def _fmt(value: float) -> str:
    if abs(value) >= 1e6:
        return f"{value / 1e6:.1f}M"
    if abs(value) >= 1e3:
        return f"{value / 1e3:.1f}k"
    return f"{value:.0f}" if float(value).is_integer() else f"{value:.3g}"


def _time(us: int) -> str:
    return datetime.fromtimestamp(us / 1e6, tz=UTC).strftime("%m-%d %H:%M")


def line_chart(title: str, times_us: Sequence[int],
               series: dict[str, Sequence[float]]) -> str:
    """Lines over time; one colour per series, a legend, axes with min/max labels."""
    esc = html.escape
    if not times_us or not series:
        return (f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
                '<p class="empty">no data yet</p></figure>')
    top = max((max(values, default=0) for values in series.values()), default=0) or 1
    bottom = min(0, *(min(values, default=0) for values in series.values()))
    span_y = (top - bottom) or 1
    n = len(times_us)
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def x(i: int) -> float:
        return LEFT + (plot_w * i / (n - 1) if n > 1 else plot_w / 2)

    def y(v: float) -> float:
        return TOP + plot_h - (v - bottom) / span_y * plot_h

    parts = [f'<svg class="chart" role="img" aria-label="{esc(title)}" '
             f'viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}">',
             f'<line x1="{LEFT}" y1="{y(bottom):.1f}" x2="{WIDTH - RIGHT}" '
             f'y2="{y(bottom):.1f}" class="axis"/>',
             f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{TOP + plot_h}" class="axis"/>',
             f'<text x="{LEFT - 6}" y="{TOP + 4}" class="tick" text-anchor="end">'
             f'{esc(_fmt(top))}</text>',
             f'<text x="{LEFT - 6}" y="{y(bottom) + 4:.1f}" class="tick" text-anchor="end">'
             f'{esc(_fmt(bottom))}</text>',
             f'<text x="{LEFT}" y="{HEIGHT - 8}" class="tick">{esc(_time(times_us[0]))}</text>',
             f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" class="tick" text-anchor="end">'
             f'{esc(_time(times_us[-1]))}</text>']
    legend_x = LEFT + 8
    for k, (name, values) in enumerate(series.items()):
        colour = PALETTE[k % len(PALETTE)]
        points = " ".join(f"{x(i):.1f},{y(v):.1f}" for i, v in enumerate(values))
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" '
                     f'points="{points}"><title>{esc(name)}</title></polyline>')
        parts.append(f'<rect x="{legend_x}" y="{TOP - 10}" width="10" height="10" '
                     f'fill="{colour}"/><text x="{legend_x + 14}" y="{TOP - 1}" '
                     f'class="legend">{esc(name)}</text>')
        legend_x += 14 + int(len(name) * 6.2) + 18
    parts.append("</svg>")
    return (f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
            f'{"".join(parts)}</figure>')


def bar_chart(title: str, labels: Sequence[str], values: Sequence[float],
              unit: str = "") -> str:
    """Horizontal bars, one per label, with the value written beside each bar."""
    esc = html.escape
    if not labels:
        return (f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
                '<p class="empty">no data yet</p></figure>')
    row, label_w = 22, 220
    height = TOP + row * len(labels) + 8
    top = max(max(values, default=0), 1)
    bar_w = WIDTH - label_w - 90
    parts = [f'<svg class="chart" role="img" aria-label="{esc(title)}" '
             f'viewBox="0 0 {WIDTH} {height}" width="{WIDTH}" height="{height}">']
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        y = TOP + i * row
        shown = label if len(label) <= 30 else label[:29] + "…"
        width = max(value, 0) / top * bar_w
        parts.append(f'<text x="{label_w - 6}" y="{y + 14}" class="tick" text-anchor="end">'
                     f'{esc(shown)}<title>{esc(label)}</title></text>'
                     f'<rect x="{label_w}" y="{y + 3}" width="{width:.1f}" height="{row - 8}" '
                     f'fill="{PALETTE[0]}"/>'
                     f'<text x="{label_w + width + 6:.1f}" y="{y + 14}" class="tick">'
                     f'{esc(_fmt(value))}{esc(unit)}</text>')
    parts.append("</svg>")
    return (f'<figure class="chart"><figcaption>{esc(title)}</figcaption>'
            f'{"".join(parts)}</figure>')
