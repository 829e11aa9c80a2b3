"""Draws the performance page's chart from the committed figures.

    python scripts/perf_chart.py           # docs/assets/perf/figures.json -> chunk_cost.svg
    python scripts/perf_chart.py --check   # exit 1 if the committed SVG is not the drawing

The figures come from `benches/docs_figures.py`. The chart is plain SVG written by hand
(no plotting library): per-chunk cost on a logarithmic axis against the response size,
one line per contender, replyparse solid and the peer dashed, one colour per dialect.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from xml.sax.saxutils import escape

ROOT = Path(__file__).resolve().parents[1]
FIGURES = ROOT / "docs" / "assets" / "perf" / "figures.json"
SVG = ROOT / "docs" / "assets" / "perf" / "chunk_cost.svg"

W, H = 800, 420
LEFT, RIGHT, TOP, BOTTOM = 80, 240, 50, 70
COLOURS = {"qwen": "#1f77b4", "qwen3coder": "#2ca02c"}
SIZE_LABELS = {"2KB": "2 KB", "32KB": "32 KB", "256KB": "256 KB", "1MB": "1 MB"}


def nice_ticks(lo: float, hi: float) -> list[float]:
    ticks = []
    e = math.floor(math.log10(lo))
    while 10**e <= hi * 10:
        for m in (1, 2, 5):
            v = m * 10**e
            if lo <= v <= hi:
                ticks.append(v)
        e += 1
    return ticks


def label_ns(v: float) -> str:
    return f"{v / 1000:g} µs" if v >= 1000 else f"{v:g} ns"


def draw(data: dict) -> str:
    sizes = list(data["sizes"])
    series = data["series"]
    values = [v for s in series.values() for v in s.values()]
    lo = 10 ** math.floor(math.log10(min(values)))
    hi = 10 ** math.ceil(math.log10(max(values)))
    pw, ph = W - LEFT - RIGHT, H - TOP - BOTTOM

    nbytes = [math.log10(data["sizes"][s]) for s in sizes]
    span = (nbytes[-1] - nbytes[0]) or 1.0

    def x(i: int) -> float:
        """Logarithmic in the response's size."""
        return LEFT + pw * (nbytes[i] - nbytes[0]) / span

    def y(v: float) -> float:
        return TOP + ph * (1 - (math.log10(v) - math.log10(lo)) / (math.log10(hi) - math.log10(lo)))

    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
        f'viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">',
        f'<rect width="{W}" height="{H}" fill="white"/>',
        f'<text x="{LEFT}" y="24" font-size="15" font-weight="bold">'
        "Cost per streamed chunk against response size</text>",
    ]
    for t in nice_ticks(lo, hi):
        yy = y(t)
        out.append(
            f'<line x1="{LEFT}" y1="{yy:.1f}" x2="{LEFT + pw}" y2="{yy:.1f}" stroke="#ddd"/>'
        )
        out.append(f'<text x="{LEFT - 8}" y="{yy + 4:.1f}" text-anchor="end">{label_ns(t)}</text>')
    for i, s in enumerate(sizes):
        out.append(
            f'<text x="{x(i):.1f}" y="{TOP + ph + 20}" text-anchor="middle">'
            f"{SIZE_LABELS.get(s, s)}</text>"
        )
    out.append(
        f'<text x="{LEFT + pw / 2:.1f}" y="{TOP + ph + 38}" text-anchor="middle">'
        "tool-call arguments in the response (log scale)</text>"
    )
    out.append(
        f'<text transform="translate(18 {TOP + ph / 2:.1f}) rotate(-90)" '
        'text-anchor="middle">per chunk (log scale)</text>'
    )
    out.append(f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
    legend_y = TOP + 10
    for name, points in series.items():
        dialect = name.split()[-1]
        colour = COLOURS.get(dialect, "#555")
        dashed = not name.startswith("replyparse")
        dash = ' stroke-dasharray="6 4"' if dashed else ""
        pts = [(x(i), y(points[s])) for i, s in enumerate(sizes) if s in points]
        path = " ".join(f"{px:.1f},{py:.1f}" for px, py in pts)
        out.append(
            f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"{dash}/>'
        )
        for px, py in pts:
            out.append(f'<circle cx="{px:.1f}" cy="{py:.1f}" r="3" fill="{colour}"/>')
        lx = LEFT + pw + 16
        out.append(
            f'<line x1="{lx}" y1="{legend_y}" x2="{lx + 24}" y2="{legend_y}" '
            f'stroke="{colour}" stroke-width="2"{dash}/>'
        )
        out.append(f'<text x="{lx + 30}" y="{legend_y + 4}">{escape(name)}</text>')
        legend_y += 20
    la = data.get("load_average")
    load = f", load average {la[0]:g}" if la else ""
    out.append(
        f'<text x="10" y="{H - 22}" font-size="10" fill="#555">{escape(data["what"])}</text>'
    )
    out.append(
        f'<text x="10" y="{H - 8}" font-size="10" fill="#555">'
        f"measured on {escape(data['measured_on'])}, {escape(data['machine'])}"
        f"{load}</text>"
    )
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true")
    args = ap.parse_args(argv)
    svg = draw(json.loads(FIGURES.read_text(encoding="utf-8")))
    if args.check:
        if not SVG.exists() or SVG.read_text(encoding="utf-8") != svg:
            print(
                f"{SVG.relative_to(ROOT)} is not the drawing of the figures: run "
                "python scripts/perf_chart.py"
            )
            return 1
        print("the chart is current")
        return 0
    SVG.write_text(svg, encoding="utf-8")
    print(f"wrote {SVG.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
