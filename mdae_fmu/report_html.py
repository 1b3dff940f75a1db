"""HTML reports and JUnit XML of ``compare`` and ``regress`` (docs/regression.md, reports).

Pages are self-contained: no script, no external resource; each signal is an inline SVG plot
with the reference tube (a filled band, class ``tube``), the reference curve (``reference``),
the test curve (``test``) and the test samples outside the tube (``excursion``). Failing
signals come first and open; passing ones are folded in ``<details>``. Every text that comes
from an input (variable, model, file names, messages) is HTML-escaped.
"""

from __future__ import annotations

import html
import math
from pathlib import Path
from xml.sax.saxutils import quoteattr

import numpy as np

W, H = 760, 250
ML, MR, MT, MB = 70, 15, 30, 35       # plot margins (pixels; the legend is in the top one)
MAX_POINTS = 4000

_CSS = """
body{font-family:sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.25em .6em;text-align:left;font-size:.92em}
th{background:#f2f2f2}
.pass{color:#176b2c;font-weight:bold}.fail{color:#b00020;font-weight:bold}
.error{color:#8a4b00;font-weight:bold}
svg{background:#fff;border:1px solid #ddd}
.tube{fill:#9ecae1;fill-opacity:.55;stroke:#9ecae1;stroke-width:3;stroke-linejoin:round}
.reference{fill:none;stroke:#08519c;stroke-width:1.2}
.test{fill:none;stroke:#d95f02;stroke-width:1.4}
.excursion{fill:#b00020}
.marker{stroke:#b00020;stroke-dasharray:4 3}
.axis{stroke:#444}.tick{font-size:10px;fill:#444}.label{font-size:11px;fill:#222}
.event{stroke:#777;stroke-width:1;stroke-dasharray:2 2}
.event.unmatched{stroke:#7b3294;stroke-width:1.5;stroke-dasharray:6 3}
.legend text{font-size:10px;fill:#222}
pre{background:#f7f7f7;padding:.6em;white-space:pre-wrap}
"""


def write_text(path: str | Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically (`mdae_fmu.output.atomic_output`: a reader never
    sees half a report), its folders created, with the permissions ``open()`` gives (the
    user's umask, like the CSV, PNG and FMU; a temporary file alone would be 0600). A path
    that cannot be written is an `OutputError` (exit 2) naming it."""
    from .output import atomic_output, writing
    with atomic_output(path, make_parents=True) as tmp:
        writing(tmp, path, lambda: tmp.write_text(text, encoding="utf-8"))


def _e(text) -> str:
    return html.escape(str(text), quote=True)


def _page(title: str, body: str) -> str:
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>{_e(title)}</title><style>{_CSS}</style></head>\n<body>\n{body}\n"
            "</body></html>\n")


def _thin(t: np.ndarray, *ys: np.ndarray):
    """At most MAX_POINTS samples for drawing (every k-th, the last one kept)."""
    n = len(t)
    if n <= MAX_POINTS:
        return (t, *ys)
    idx = np.unique(np.r_[np.arange(0, n, int(math.ceil(n / MAX_POINTS))), n - 1])
    return (t[idx], *(y[idx] for y in ys))


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    step = 10 ** math.floor(math.log10((hi - lo) / n))
    for m in (1, 2, 5, 10):
        if (hi - lo) / (step * m) <= n:
            step *= m
            break
    first = math.ceil(lo / step) * step
    return [first + k * step for k in range(int((hi - first) / step) + 1)]


#: Entries of a plot's legend: (class, what the entry draws, label).
LEGEND = (("tube", "band", "tube"), ("reference", "line", "reference"),
          ("test", "line", "test"), ("excursion", "dot", "outside the tube"),
          ("marker", "line", "largest excursion"), ("event", "line", "events (paired)"),
          ("event unmatched", "line", "unpaired event"))


def _legend() -> str:
    """The plot's legend, in the top margin: a sample of each mark and its label."""
    parts, x = ['<g class="legend">'], float(ML)
    for cls, kind, label in LEGEND:
        if kind == "band":
            parts.append(f'<rect class="{cls}" x="{x:.0f}" y="8" width="18" height="9"/>')
        elif kind == "dot":
            parts.append(f'<circle class="{cls}" cx="{x + 9:.0f}" cy="12.5" r="2.5"/>')
        else:
            parts.append(f'<line class="{cls}" x1="{x:.0f}" x2="{x + 18:.0f}" y1="12.5" '
                         f'y2="12.5"/>')
        parts.append(f'<text x="{x + 22:.0f}" y="16">{label}</text>')
        x += 30 + 5.6 * len(label)
    parts.append("</g>")
    return "".join(parts)


def _event_marks(events, X, t0: float, t1: float) -> list[str]:
    """Vertical lines at the events ``(test time or None, reference time or None)``: a paired
    event at the test's time, titled with both times; an unpaired one at its own time in the
    unmatched style (at most 200)."""
    parts = []
    for tt, tr in list(events)[:200]:
        at = tt if tt is not None else tr
        if at is None or not t0 <= at <= t1:
            continue
        if tt is not None and tr is not None:
            cls, title = "event", f"event: test t = {tt:.10g}, reference t = {tr:.10g}"
        else:
            side = "test" if tt is not None else "reference"
            cls, title = "event unmatched", f"{side} event at t = {at:.10g}, no partner"
        xe = float(X(at))
        parts.append(f'<line class="{cls}" x1="{xe:.2f}" x2="{xe:.2f}" y1="{MT}" '
                     f'y2="{H - MB}"><title>{title}</title></line>')
    return parts


def signal_svg(s, events=()) -> str:
    """An SVG plot of one `mdae_fmu.comparison.SignalResult`: tube, reference, test, the test
    samples outside the tube, a dashed line at the largest excursion, the ``events`` (pairs
    of test and reference times, None for a side without one), a legend, and the axes
    labelled with time in s and the variable with its unit."""
    t, y, lo, hi = _thin(s.t, s.y, s.lower, s.upper)
    tr, yr = _thin(s.t_ref, s.y_ref)
    finite = [a[np.isfinite(a)] for a in (y, yr, lo, hi)]
    vals = np.concatenate([a for a in finite if len(a)]) if any(len(a) for a in finite) \
        else np.zeros(1)
    y0, y1 = float(vals.min()), float(vals.max())
    if y1 - y0 < 1e-300:
        y0, y1 = y0 - 1.0, y1 + 1.0
    pad = 0.05 * (y1 - y0)
    y0, y1 = y0 - pad, y1 + pad
    t0 = float(min(tr[0], t[0]))
    t1 = float(max(tr[-1], t[-1]))
    if t1 <= t0:
        t1 = t0 + 1.0

    def X(v):
        return ML + (np.asarray(v, float) - t0) / (t1 - t0) * (W - ML - MR)

    def Y(v):
        v = np.clip(np.asarray(v, float), y0, y1)
        return MT + (y1 - v) / (y1 - y0) * (H - MT - MB)

    def pts(xs, ys):
        return " ".join(f"{a:.2f},{b:.2f}" for a, b in zip(X(xs), Y(ys)))

    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" '
             f'viewBox="0 0 {W} {H}" role="img" aria-label="{_e(s.name)}">', _legend()]
    parts += _event_marks(events, X, t0, t1)
    ok = np.isfinite(lo) & np.isfinite(hi)
    if ok.any():
        band = pts(t[ok], hi[ok]) + " " + pts(t[ok][::-1], lo[ok][::-1])
        parts.append(f'<polygon class="tube" points="{band}"><title>reference tube'
                     f'</title></polygon>')
    parts.append(f'<polyline class="reference" points="{pts(tr, yr)}"><title>reference'
                 f'</title></polyline>')
    parts.append(f'<polyline class="test" points="{pts(t, y)}"><title>test</title>'
                 f'</polyline>')
    out = np.flatnonzero((y < lo) | (y > hi))
    if len(out) > 200:                     # at most 200 marks, spread over all excursions
        out = out[np.unique(np.linspace(0, len(out) - 1, 200).round().astype(int))]
    for tk, yk in zip(t[out], y[out]):
        parts.append(f'<circle class="excursion" cx="{X(tk):.2f}" cy="{Y(yk):.2f}" r="2.5">'
                     f'<title>t = {tk:.10g}: {yk:.10g} outside the tube</title></circle>')
    if not s.passed and math.isfinite(s.at_time):
        xm = float(X(s.at_time))
        parts.append(f'<line class="marker" x1="{xm:.2f}" x2="{xm:.2f}" y1="{MT}" '
                     f'y2="{H - MB}"/>')
    # axes and ticks
    parts.append(f'<line class="axis" x1="{ML}" x2="{W - MR}" y1="{H - MB}" y2="{H - MB}"/>')
    parts.append(f'<line class="axis" x1="{ML}" x2="{ML}" y1="{MT}" y2="{H - MB}"/>')
    for v in _ticks(t0, t1):
        parts.append(f'<text class="tick" x="{float(X(v)):.1f}" y="{H - MB + 14}" '
                     f'text-anchor="middle">{v:.6g}</text>')
    for v in _ticks(y0, y1):
        parts.append(f'<text class="tick" x="{ML - 4}" y="{float(Y(v)) + 3:.1f}" '
                     f'text-anchor="end">{v:.6g}</text>')
    parts.append(f'<text class="label" x="{(W + ML) / 2:.0f}" y="{H - 4}" '
                 f'text-anchor="middle">time [s]</text>')
    unit = getattr(s, "unit", "")
    ylabel = _e(s.name) + (f" [{_e(unit)}]" if unit else "")
    ym = (MT + H - MB) / 2
    parts.append(f'<text class="label ylabel" x="12" y="{ym:.0f}" text-anchor="middle" '
                 f'transform="rotate(-90 12 {ym:.0f})">{ylabel}</text>')
    parts.append("</svg>")
    return "".join(parts)


def _verdict(passed: bool) -> str:
    return '<span class="pass">PASS</span>' if passed else '<span class="fail">FAIL</span>'


def comparison_body(c) -> str:
    """The body of a comparison report (`mdae_fmu.comparison.Comparison`)."""
    rows = []
    for s in c.signals:
        where = "" if s.passed else f"{s.at_time:.10g}"
        exc = "0" if s.passed else f"{s.max_excursion:.4g} ({s.max_excursion / s.tolerance:.3g}x)"
        rows.append(f"<tr><td><a href=\"#sig-{_e(s.name)}\">{_e(s.name)}</a></td>"
                    f"<td>{_verdict(s.passed)}</td><td>{s.tolerance:.3g}</td><td>{exc}</td>"
                    f"<td>{where}</td><td>{s.outside}</td></tr>")
    out = [f"<h1>{_verdict(c.passed)} {_e(Path(c.test).name)} against "
           f"{_e(Path(c.reference).name)}</h1>",
           f"<p>test: <code>{_e(c.test)}</code><br>reference: <code>{_e(c.reference)}</code>"
           f"<br>rtol {c.rtol:g}, atol {c.atol:g}, time tolerance {c.time_tolerance:g}, "
           f"method {_e(c.method)}</p>",
           "<table id=\"signals\"><tr><th>variable</th><th>verdict</th><th>tolerance</th>"
           "<th>largest excursion</th><th>at time</th><th>samples outside</th></tr>",
           *rows, "</table>", "<h2>Events</h2>",
           "<table id=\"events\"><tr><th>test time</th><th>reference time</th>"
           "<th>&Delta;t</th><th>test changes</th><th>reference changes</th></tr>"]
    pairs = c.paired_events()
    for te, re_ in pairs[:200]:
        cells = [f"{te.time:.10g}" if te else "&mdash;", f"{re_.time:.10g}" if re_ else "&mdash;",
                 f"{te.time - re_.time:.3g}" if te and re_ else "unpaired",
                 _changes(te), _changes(re_)]
        cls = "" if te and re_ else ' class="unmatched"'
        out.append(f"<tr{cls}>" + "".join(f"<td>{x}</td>" for x in cells) + "</tr>")
    if len(pairs) > 200:
        out.append(f"<tr><td colspan=\"5\">{len(pairs) - 200} more</td></tr>")
    out.append("</table>")
    marks = [(te.time if te else None, re_.time if re_ else None) for te, re_ in pairs]
    um = c.unmatched_events()
    if um:
        out.append(f"<p>{len(um)} unmatched event(s): " + ", ".join(
            f"{side} t = {t:.10g}" for side, t in um[:50]) + "</p>")
    if c.skipped:
        out.append("<p>Not compared (reference columns the test does not have): "
                   + _e(", ".join(c.skipped)) + "</p>")
    out.append("<h2>Signals</h2>")
    for s in sorted(c.signals, key=lambda s: s.passed):
        head = f"{_verdict(s.passed)} {_e(s.name)}"
        fig = (f"<figure class=\"signal\" id=\"sig-{_e(s.name)}\" data-passed="
               f"\"{str(s.passed).lower()}\"><figcaption>{_verdict(s.passed)} "
               f"{_e(s.describe())}"
               f"</figcaption>{signal_svg(s, marks)}</figure>")
        out.append(fig if not s.passed else f"<details><summary>{head}</summary>{fig}"
                   "</details>")
    return "\n".join(out)


def _changes(ev) -> str:
    """An event's changes as table text (``name: left &rarr; right``), escaped."""
    if ev is None:
        return ""
    return ", ".join(f"{_e(n)}: {a:.6g} &rarr; {b:.6g}" for n, a, b in ev.changes[:20])


def comparison_page(c) -> str:
    """A whole HTML page for one comparison."""
    return _page(f"compare {Path(c.test).name}", comparison_body(c))


def entry_page(entry: dict) -> str:
    """A suite entry's page: its comparison, or its error message."""
    c = entry.get("comparison")
    body = ['<p><a href="../index.html">&larr; suite index</a></p>']
    if c is not None:
        body.append(comparison_body(c))
    else:
        body.append(f"<h1><span class=\"error\">ERROR</span> {_e(entry['name'])}</h1>"
                    f"<pre>{_e(entry.get('message', ''))}</pre>")
    return _page(entry["name"], "\n".join(body))


def index_page(title: str, entries: list[dict]) -> str:
    """The suite index: a summary line and one row per entry linking its report."""
    n_pass = sum(e["status"] == "pass" for e in entries)
    rows = []
    for e in entries:
        cls = {"pass": "pass", "fail": "fail"}.get(e["status"], "error")
        rows.append(f"<tr class=\"entry\"><td><a href=\"{_e(e['report'])}\">{_e(e['name'])}"
                    f"</a></td><td><span class=\"{cls}\">{e['status'].upper()}</span></td>"
                    f"<td>{e.get('seconds', 0.0):.2f}</td><td>{_e(e.get('summary', ''))}"
                    f"</td></tr>")
    body = (f"<h1>{_e(title)}</h1><p id=\"summary\">{n_pass} of {len(entries)} passed</p>"
            "<table id=\"entries\"><tr><th>model</th><th>verdict</th><th>seconds</th>"
            "<th>summary</th></tr>" + "".join(rows) + "</table>")
    return _page(title, body)


def junit_xml(suite: str, entries: list[dict]) -> str:
    """JUnit XML: one testcase per entry; a tube failure is a <failure>, an entry that could
    not be exported or simulated an <error>, each with its message."""
    def case(e):
        name = e["name"]
        c = e.get("comparison")
        secs = float(e.get("seconds", 0.0))
        head = (f"<testcase classname={quoteattr('mdae_fmu.' + suite)} name={quoteattr(name)} "
                f"time=\"{secs:.3f}\"")
        if c is not None and c.passed:
            return head + "/>"
        if c is not None:
            msg = "; ".join(s.describe() for s in c.failed)
            return (head + f"><failure message={quoteattr(msg[:500])} type=\"tube\">"
                    f"{html.escape(c.render_text(), quote=False)}</failure></testcase>")
        msg = e.get("message", "")
        return (head + f"><error message={quoteattr(msg.splitlines()[0][:500] if msg else '')}"
                f" type=\"{_e(e.get('error_type', 'error'))}\">"
                f"{html.escape(msg, quote=False)}</error></testcase>")
    failures = sum(1 for e in entries if e.get("comparison") is not None
                   and not e["comparison"].passed)
    errors = sum(1 for e in entries if e.get("comparison") is None)
    total = sum(float(e.get("seconds", 0.0)) for e in entries)
    return ("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            f"<testsuites><testsuite name={quoteattr(suite)} tests=\"{len(entries)}\" "
            f"failures=\"{failures}\" errors=\"{errors}\" time=\"{total:.3f}\">\n"
            + "\n".join(case(e) for e in entries) + "\n</testsuite></testsuites>\n")


__all__ = ["comparison_page", "entry_page", "index_page", "junit_xml", "signal_svg",
           "write_text"]
