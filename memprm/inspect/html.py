"""The page model as one self-contained HTML document: inline CSS, inline SVG, a few lines of inline JS.

Nothing is fetched when the page opens (no script, font or image from elsewhere; the ladder plot, when there
is one, is embedded as a data URI). Every table is static HTML, so the page reads without JavaScript; the
script only filters and sorts the entry tables (layer, minimum credit, load-bearing only, never retrieved,
verbatim twins; by bank order, credit, φ or retrievals). The filter state lives in the URL fragment
(``#f:layer=profile&lb=1&sort=credit``), so a filtered view can be linked and is applied on load.
"""

from __future__ import annotations

import base64
import html
import re
from collections.abc import Iterable, Sequence

from memprm.eval.significance import clustered_interval
from memprm.inspect.model import BankPage, DevPoint, EntryView, PageModel, QuestionView, Summary, VersionView

_ID = re.compile(r"[^A-Za-z0-9_-]")


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def anchor(*parts: object) -> str:
    """An HTML id from ``parts`` (characters outside ``[A-Za-z0-9_-]`` become ``_``)."""
    return "-".join(_ID.sub("_", str(p)) for p in parts)


def fmt(x: float | None, digits: int = 2) -> str:
    return "–" if x is None else f"{x:.{digits}f}"


def pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}"


# ---------------------------------------------------------------------------------------------- page
def render_page(model: PageModel) -> str:
    s = model.summary
    nav = " ".join(f'<a href="#{anchor("d", d)}">{esc(d)}</a>' for d in model.shown)
    body = [
        f'<header><h1>memprm audit trail: {esc(s.run_name)}</h1><nav><a href="#summary">summary</a> · '
        f"dialogues: {nav}</nav></header>",
        render_summary(s),
        _CONTROLS,
    ]
    index = {id(b): i for i, b in enumerate(model.banks)}
    for d in model.shown:
        banks = [b for b in model.banks if b.dialogue == d]
        body.append(f'<section class="dlg" id="{anchor("d", d)}"><h2>Dialogue {esc(d)}</h2>')
        body.extend(render_bank(b, index[id(b)], first=j == 0) for j, b in enumerate(banks))
        body.append("</section>")
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<title>memprm inspect: {esc(s.run_name)}</title><link rel="icon" href="data:,">'
        f"<style>{_CSS}</style></head><body>\n"
        + "\n".join(body)
        + f"\n<script>{_JS}</script></body></html>\n"
    )


# ---------------------------------------------------------------------------------------------- summary
def render_summary(s: Summary) -> str:
    parts = ['<section id="summary"><h2>Summary</h2>']
    lines = s.config_text.count("\n")
    parts.append(
        f"<details><summary>config.yaml ({lines} lines)</summary><pre>{esc(s.config_text)}</pre></details>"
        if s.config_text
        else "<p>No config.yaml in the run folder.</p>"
    )
    parts.append("<h3>Test accuracy (%) per manager and category</h3>" + test_table(s))
    parts.append("<h3>Audit of the test exams per manager</h3>" + audit_table(s))
    credit = s.credit
    parts.append(
        "<p class=note>Credit: Eq. (6) (full variant, weights "
        f"{esc(_weights(credit))}, positive part {esc(credit.get('positive', 'max'))}, toxicity "
        f"{esc(credit.get('toxicity', 'any'))}); op credit by chain mode <b>{esc(credit.get('chain', ''))}</b>; "
        + (
            "φ: the run's critic on each gate's decision-time rendering."
            if s.critic
            else "φ: not available (no critic in this run)."
        )
        + "</p>"
    )
    parts.append("<h3>Critic validity</h3>")
    parts.append(
        markdown_block(s.validity_md) + f"<p class=note>{esc(s.validity_source)}</p>"
        if s.validity_md
        else "<p>No critic validity report (the run has no critic stage).</p>"
    )
    parts.append("<h3>Dev-selection accuracy</h3>")
    parts.append(
        dev_svg(s.dev_curve, s.dev_best_step) if s.dev_curve else "<p>No GRPO stage in this run.</p>"
    )
    if s.ladder_md or s.ladder_png:
        parts.append("<h3>Ladder (runs beside this one)</h3>")
        if s.ladder_png:
            data = base64.b64encode(s.ladder_png).decode()
            parts.append(f'<img class="ladder" alt="ladder plot" src="data:image/png;base64,{data}">')
        parts.append(markdown_block(s.ladder_md))
    parts.append("</section>")
    return "\n".join(parts)


def _weights(credit: dict) -> str:
    w = credit.get("weights") or {}
    return " / ".join(f"{k} {w[k]}" for k in ("retrieved", "cited", "flips", "toxicity") if k in w)


def _interval(r: dict) -> str:
    """The dialogue-clustered 95% interval of a saved result, ``–`` for one saved without per-dialogue counts."""
    n, c = r.get("per_dialogue_questions") or {}, r.get("per_dialogue_correct") or {}
    if not n or set(n) != set(c):
        return "–"
    return clustered_interval([c[i] for i in n], [n[i] for i in n]).format()


def test_table(s: Summary) -> str:
    cats = s.categories
    head = "<tr><th>manager</th><th>questions</th><th>accuracy</th><th>95% CI (by dialogue)</th>" + "".join(
        f"<th>{esc(c)}</th>" for c in cats
    )
    head += "<th>context tokens</th><th>entries / dialogue</th><th>versions / entry</th></tr>"
    rows = []
    for name, r in s.test_results.items():
        by = r.get("by_category", {})
        rows.append(
            f"<tr><td>{esc(name)}</td><td>{r.get('n_questions', '')}</td><td>{pct(r.get('accuracy'))}</td>"
            f"<td>{esc(_interval(r))}</td>"
            + "".join(f"<td>{pct(by.get(c))}</td>" for c in cats)
            + f"<td>{fmt(r.get('context_tokens'), 0)}</td><td>{fmt(r.get('entries'), 1)}</td>"
            f"<td>{fmt(r.get('versions_per_entry'))}</td></tr>"
        )
    return f'<table class="sum">{head}{"".join(rows)}</table>'


def audit_table(s: Summary) -> str:
    head = (
        "<tr><th>manager</th><th>dialogues</th><th>questions</th><th>correct</th><th>managed entries</th>"
        "<th>load-bearing</th><th>deletion-tested</th><th>never retrieved</th><th>toxic (cured)</th>"
        "<th>verbatim-twin versions</th></tr>"
    )
    rows = []
    for m in s.managers:
        share = f" ({100 * m.twin_versions / m.managed_versions:.0f}%)" if m.managed_versions else ""
        rows.append(
            f"<tr><td>{esc(m.manager)}</td><td>{m.dialogues}</td><td>{m.questions}</td><td>{m.correct}</td>"
            f"<td>{m.managed_entries}</td><td>{m.load_bearing}</td><td>{m.tested}</td><td>{m.never_retrieved}</td>"
            f"<td>{m.cures}</td><td>{m.twin_versions} of {m.managed_versions}{share}</td></tr>"
        )
    return f'<table class="sum">{head}{"".join(rows)}</table>'


def dev_svg(points: Sequence[DevPoint], best_step: int | None, w: int = 420, h: int = 180) -> str:
    """Dev-selection accuracy against optimizer steps as an inline SVG line plot."""
    pad_l, pad_r, pad_t, pad_b = 44, 12, 10, 34
    xs, ys = [p.step for p in points], [p.accuracy for p in points]
    x0, x1 = min(xs), max(xs) if max(xs) > min(xs) else min(xs) + 1
    lo, hi = min(ys), max(ys)
    y0, y1 = (lo - 0.05, hi + 0.05) if hi - lo < 1e-9 else (lo - 0.1 * (hi - lo), hi + 0.1 * (hi - lo))

    def px(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * (w - pad_l - pad_r)

    def py(y: float) -> float:
        return h - pad_b - (y - y0) / (y1 - y0) * (h - pad_t - pad_b)

    line = " ".join(f"{px(p.step):.1f},{py(p.accuracy):.1f}" for p in points)
    dots = "".join(
        f'<circle cx="{px(p.step):.1f}" cy="{py(p.accuracy):.1f}" r="{4 if p.step == best_step else 2.5}" '
        f'class="{"best" if p.step == best_step else "pt"}"><title>step {p.step}: {pct(p.accuracy)}% '
        f"({p.rollouts} rollouts)</title></circle>"
        for p in points
    )
    axes = (
        f'<line x1="{pad_l}" y1="{h - pad_b}" x2="{w - pad_r}" y2="{h - pad_b}" class="ax"/>'
        f'<line x1="{pad_l}" y1="{pad_t}" x2="{pad_l}" y2="{h - pad_b}" class="ax"/>'
        f'<text x="{pad_l}" y="{h - pad_b + 14}">{x0}</text>'
        f'<text x="{w - pad_r}" y="{h - pad_b + 14}" text-anchor="end">{x1}</text>'
        f'<text x="{(w + pad_l) / 2:.0f}" y="{h - 6}" text-anchor="middle">optimizer step</text>'
        f'<text x="{pad_l - 4}" y="{py(hi):.1f}" text-anchor="end">{pct(hi)}</text>'
        f'<text x="{pad_l - 4}" y="{py(lo):.1f}" text-anchor="end">{pct(lo)}</text>'
    )
    best = f"; best at step {best_step}" if best_step is not None else ""
    return (
        f'<svg class="plot" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" '
        f'aria-label="dev-selection accuracy (%) by step{best}">{axes}'
        f'<polyline points="{line}" class="ln"/>{dots}</svg><p class=note>accuracy (%) on the dev selection '
        f"half{esc(best)}</p>"
    )


def markdown_block(text: str) -> str:
    """The small markdown subset the run's reports use: headings, pipe tables, paragraphs, ``**bold**``."""
    out, table = [], []

    def inline(t: str) -> str:
        return re.sub(r"\*\*(.+?)\*\*", r"<b>\1</b>", esc(t))

    def flush() -> None:
        if not table:
            return
        rows = [[c.strip() for c in r.strip().strip("|").split("|")] for r in table]
        rows = [r for r in rows if not all(set(c) <= set("-: ") for c in r)]
        head, rest = rows[0], rows[1:]
        out.append(
            '<table class="sum"><tr>'
            + "".join(f"<th>{inline(c)}</th>" for c in head)
            + "</tr>"
            + "".join("<tr>" + "".join(f"<td>{inline(c)}</td>" for c in r) + "</tr>" for r in rest)
            + "</table>"
        )
        table.clear()

    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("|"):
            table.append(line)
            continue
        flush()
        if line.startswith("#"):
            out.append(f"<h4>{inline(line.lstrip('#').strip())}</h4>")
        elif line:
            out.append(f"<p>{inline(line)}</p>")
    flush()
    return "\n".join(out)


# ---------------------------------------------------------------------------------------------- banks
def render_bank(b: BankPage, n: int, first: bool = False) -> str:
    ops = ", ".join(f"{k} {v}" for k, v in sorted(b.ops.items()))
    audit = "" if b.audited else " · <b>not audited</b> (no deletion tests)"
    head = (
        f"<summary><b>{esc(b.manager)}</b> — accuracy {pct(b.accuracy)}% on {len(b.questions)} questions · "
        f"{b.managed_entries} managed entries ({b.twin_versions} of {b.managed_versions} versions verbatim twins) · "
        f'gates: {esc(ops)}{audit} · <span class="cnt"></span></summary>'
    )
    rows = "".join(entry_row(e, n, i, b.dialogue) for i, e in enumerate(b.entries))
    table = (
        '<table class="ent"><thead><tr><th>entry</th><th>layer</th><th>version chain (op, step, date, source '
        "turns, φ, op credit)</th><th>retrieved by</th><th>cited by</th><th>flipped</th><th>cured</th>"
        f'<th>Eq. (6)</th><th>φ</th></tr></thead><tbody class="entries">{rows}</tbody></table>'
    )
    note = (
        f"<p class=note>{b.verbatim_unlisted} of {b.verbatim_entries} verbatim entries (one per turn) were "
        "retrieved by no question and are not listed.</p>"
    )
    questions = "".join(question_row(q, n) for q in b.questions)
    qtable = (
        f'<details class="qs"><summary>Questions ({len(b.questions)}): retrieved set, answer, verdict, deletion '
        f'tests</summary><table class="q"><thead><tr><th>question</th><th>gold / answer</th><th>verdict</th>'
        f"<th>retrieved (layer entry score; cited in bold)</th><th>deletion tests</th></tr></thead><tbody>"
        f"{questions}</tbody></table></details>"
    )
    return (
        f'<details class="bank" id="{anchor("b", n)}" data-manager="{esc(b.manager)}"{" open" if first else ""}>'
        f"{head}{table}{note}{qtable}</details>"
    )


def entry_row(e: EntryView, n: int, i: int, dialogue: str) -> str:
    attrs = (
        f'class="e{" lb" if e.load_bearing else ""}{" tw" if e.twin else ""}" id="{anchor("b", n, e.id)}" '
        f'data-i="{i}" data-layer="{e.layer}" data-credit="{"" if e.credit is None else f"{e.credit:.4f}"}" '
        f'data-lb="{int(e.load_bearing)}" data-nr="{int(e.never_retrieved)}" data-tw="{int(e.twin)}" '
        f'data-phi="{"" if e.phi is None else e.phi}" data-retr="{len(e.retrieved_by)}"'
    )
    key = f'<div class="k">{esc(e.key)}</div>' if e.key and e.layer != "verbatim" else ""
    chain = "<ol>" + "".join(version_item(v) for v in e.versions) + "</ol>"
    return (
        f"<tr {attrs}><td class=id>{esc(e.id)}{key}</td><td>{e.layer}</td><td class=chain>{chain}</td>"
        f'<td class="retr">{qlinks(e.retrieved_by, n, dialogue)}</td><td class="cited">{qlinks(e.cited_by, n, dialogue)}</td>'
        f'<td class="flip">{qlinks(e.flipped, n, dialogue)}</td><td class="cure">{qlinks(e.cured, n, dialogue)}</td>'
        f'<td class="cr">{fmt(e.credit)}</td><td class="phi">{fmt(e.phi)}</td></tr>'
    )


def version_item(v: VersionView) -> str:
    meta = [f"v{v.index}"]
    if v.op_kind == "verbatim":
        meta.append("verbatim (automatic)")
    else:
        meta.append(f"{v.op_kind.upper()} {esc(v.op_id)}")
        if v.step is not None:
            meta.append(f"step {v.step}" + (f", session {v.window}" if v.window is not None else ""))
    meta.append(esc((v.timestamp or "undated")[:10]))
    if v.source_turns:
        meta.append("turns " + esc(" ".join(v.source_turns)))
    if v.phi is not None:
        meta.append(f"φ {v.phi:.2f}")
    if v.op_credit is not None:
        meta.append(f"op credit {v.op_credit:.2f}")
    twin = ' <span class="twin" title="content equals its source turn">verbatim twin</span>' if v.twin else ""
    return f'<li><span class="m">{" · ".join(meta)}</span>{twin}<div class="c">{esc(v.content)}</div></li>'


def short(qid: str, dialogue: str) -> str:
    """A question id without its dialogue's prefix (``syn-002/q01`` → ``q01`` inside dialogue syn-002)."""
    for sep in ("/", ":", "_"):
        if qid.startswith(dialogue + sep):
            return qid[len(dialogue) + 1 :]
    return qid


def qlinks(qids: Iterable[str], n: int, dialogue: str) -> str:
    qids = list(qids)
    if not qids:
        return ""
    links = " ".join(f'<a href="#{anchor("b", n, "q", q)}">{esc(short(q, dialogue))}</a>' for q in qids)
    return f"<b>{len(qids)}</b> {links}"


def question_row(q: QuestionView, n: int) -> str:
    if q.failed:
        verdict = '<span class="fail">failed call</span>'
    else:
        verdict = f'<span class="{"ok" if q.correct else "bad"}">{"correct" if q.correct else "wrong"}</span> {q.score:.2f}'
    hits = " ".join(
        f'<a href="#{anchor("b", n, h.entry_id)}" class="h{" hc" if h.cited else ""}">'
        f"{h.layer[0].upper()} {esc(h.entry_id)} {h.score:.2f}</a>"
        for h in q.hits
    )
    dropped = (
        f" <i>dropped citations: {esc(' '.join(q.dropped_citations))}</i>" if q.dropped_citations else ""
    )
    tests = " ".join(
        f'<span class="t {t.outcome.replace(" ", "-")}">{esc(t.entry_id)}: {t.outcome}</span>'
        for t in q.tests
    )
    return (
        f'<tr id="{anchor("b", n, "q", q.id)}"><td><b>{esc(q.id)}</b><div class="k">{esc(q.category)} · '
        f"weight {q.weight:g}</div>{esc(q.text)}</td><td>{esc(q.gold)}<hr>{esc(q.answer)}</td><td>{verdict}</td>"
        f'<td class="hits">{hits}{dropped}</td><td class="tests">{tests}</td></tr>'
    )


_CONTROLS = """<div id="controls">filter entries: <label>layer <select id="f-layer"><option value="all">all</option>
<option value="managed">managed</option><option value="event">event</option><option value="profile">profile</option>
<option value="verbatim">verbatim</option></select></label> <label>Eq. (6) ≥ <input id="f-min" type="number"
step="0.1" size="4"></label> <label><input id="f-lb" type="checkbox"> load-bearing only</label>
<label><input id="f-nr" type="checkbox"> never retrieved</label> <label><input id="f-tw" type="checkbox">
verbatim twins</label> <label>sort <select id="f-sort"><option value="i">bank order</option>
<option value="credit">Eq. (6) credit</option><option value="phi">φ</option><option value="retr">retrievals</option>
</select></label> <span id="shown"></span></div>"""

_CSS = """body{font:13px/1.35 system-ui,sans-serif;margin:0 1.2em 2em;color:#222}h1{font-size:1.3em;margin:.6em 0 .2em}
h2{font-size:1.15em;border-bottom:1px solid #bbb;margin-top:1.2em}h3{font-size:1em;margin:1em 0 .3em}
h4{font-size:.95em;margin:.6em 0 .2em}table{border-collapse:collapse;margin:.3em 0}
td,th{border:1px solid #ccc;padding:2px 5px;vertical-align:top;text-align:left}th{background:#f0f0f0}
table.sum td{text-align:right}table.sum td:first-child{text-align:left}pre{background:#f7f7f7;padding:.5em;
max-height:30em;overflow:auto}.note{color:#555;font-size:.92em}#controls{position:sticky;top:0;background:#fffbe6;
border:1px solid #e0d8a8;padding:4px 8px;margin:1em 0;z-index:2}#shown{margin-left:1em;font-weight:bold}
details.bank{margin:.5em 0;border:1px solid #ddd;padding:3px 6px}details.bank>summary{cursor:pointer}
table.ent,table.q{width:100%}td.chain ol{margin:0;padding-left:1.2em}td.chain li{margin-bottom:2px}
.m{color:#666;font-size:.9em}.c{white-space:pre-wrap}.k{color:#777;font-size:.88em}td.id{white-space:nowrap}
tr.lb td.flip,td.flip a{color:#a00;font-weight:bold}tr.lb{background:#fff4f0}.twin{background:#fcd;color:#803;
padding:0 4px;border-radius:3px;font-size:.85em}tr.tw td.id{border-left:4px solid #d48}.cnt{color:#555}
a.h{display:inline-block;margin:0 3px 2px 0;padding:0 3px;border:1px solid #ddd;border-radius:3px;
text-decoration:none;color:#333}a.hc{font-weight:bold;border-color:#48a;background:#eef5ff}.ok{color:#060}
.bad{color:#a00}.fail{color:#850}.t{display:inline-block;margin-right:4px}.t.flipped,.t.cured{font-weight:bold;
color:#a00}td.cr,td.phi{text-align:right}svg.plot text{font-size:10px;fill:#444}.ax{stroke:#888}
.ln{fill:none;stroke:#36c;stroke-width:1.5}.pt{fill:#36c}.best{fill:#c33}img.ladder{max-width:640px}
td.hits{max-width:28em}td.chain{width:42%}td.retr{max-width:16em}"""

_JS = """(function(){
var $=function(s){return document.querySelector(s)},rows=[].slice.call(document.querySelectorAll('tr.e'));
var c={layer:$('#f-layer'),min:$('#f-min'),lb:$('#f-lb'),nr:$('#f-nr'),tw:$('#f-tw'),sort:$('#f-sort')};
function num(r,k){var v=r.getAttribute('data-'+k);return v===''?-1e9:+v}
function apply(save){var L=c.layer.value,m=c.min.value===''?null:+c.min.value,n=0;
 rows.forEach(function(r){var l=r.getAttribute('data-layer'),ok=(L==='all'||(L==='managed'?l!=='verbatim':l===L))
  &&(m===null||num(r,'credit')>=m)&&(!c.lb.checked||r.getAttribute('data-lb')==='1')
  &&(!c.nr.checked||r.getAttribute('data-nr')==='1')&&(!c.tw.checked||r.getAttribute('data-tw')==='1');
  r.style.display=ok?'':'none';n+=ok?1:0});
 var k=c.sort.value;document.querySelectorAll('tbody.entries').forEach(function(tb){
  var rs=[].slice.call(tb.rows);rs.sort(function(a,b){return (k==='i'?0:num(b,k)-num(a,k))||num(a,'i')-num(b,'i')});
  rs.forEach(function(r){tb.appendChild(r)});var v=rs.filter(function(r){return r.style.display!=='none'}).length;
  tb.closest('details').querySelector('.cnt').textContent=v+' of '+rs.length+' rows shown'});
 $('#shown').textContent=n+' of '+rows.length+' entries shown';document.body.setAttribute('data-shown',n);
 if(save){var h=[];if(L!=='all')h.push('layer='+L);if(m!==null)h.push('min='+m);['lb','nr','tw'].forEach(function(x){
  if(c[x].checked)h.push(x+'=1')});if(k!=='i')h.push('sort='+k);history.replaceState(null,'',h.length?'#f:'+h.join('&'):'#')}}
function load(){var h=location.hash;if(h.indexOf('#f:')!==0)return false;var p=new URLSearchParams(h.slice(3));
 c.layer.value=p.get('layer')||'all';c.min.value=p.get('min')||'';c.sort.value=p.get('sort')||'i';
 ['lb','nr','tw'].forEach(function(x){c[x].checked=p.get(x)==='1'});return true}
Object.keys(c).forEach(function(x){c[x].addEventListener(x==='min'?'input':'change',function(){apply(true)})});
window.addEventListener('hashchange',function(){if(load())apply(false)});
document.addEventListener('click',function(e){var a=e.target.closest('a[href^="#b"]');if(!a)return;
 var t=document.getElementById(a.getAttribute('href').slice(1));for(var d=t&&t.closest('details');d;
 d=d.parentElement.closest('details'))d.open=true});
load();apply(false)})();"""
