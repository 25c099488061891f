#!/usr/bin/env python3
"""Renders a Parallax HTML report in headless Chromium and checks that it is really drawn.

1. A screenshot of the report is not blank: a good share of its pixels is not background, and
   several distinct colours appear (the charts' palette).
2. Every chart's SVG has rendered with a real size and data inside, queried in the browser's DOM
   through a test-only wrapper page (the report itself has no scripts).
3. Issue 24, in the rendered layout: every chart has a legend; no two rank labels of the pipeline
   chart overlap (their bounding boxes); the days axis is log exactly when the plotted days span
   more than a decade; the tokens-per-parameter assumption is printed; every column of every table
   is defined; without --price every cost cell is a dash (a second report, GPT-3 175B).

Usage: check_report_browser.py PARALLAX_BIN OUT_DIR [--save-screenshot PNG]
Exit 0 on success, 1 on a failed check, 77 (ctest: skipped) when Chromium is not installed.
"""
import json
import math
import os
import shutil
import struct
import subprocess
import sys
import zlib

CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--disable-quic", "--hide-scrollbars"]
CHARTS = ["chart-memory", "chart-time", "chart-pipeline", "chart-scaling"]

# Runs in the wrapper page; reads each report's iframe and writes JSON into <pre id="result">.
DOM_QUERY = """
window.addEventListener('load', () => {
  const out = {};
  for (const f of document.querySelectorAll('iframe')) {
    const d = f.contentDocument, r = {charts: {}, tables: {}};
    for (const s of d.querySelectorAll('svg.chart')) {
      const b = s.getBoundingClientRect();
      r.charts[s.id] = {w: b.width, h: b.height,
                        marks: s.querySelectorAll('rect,circle,polyline').length,
                        legend_items: s.querySelectorAll('g.legend text').length};
    }
    r.rank_labels = [...d.querySelectorAll('#chart-pipeline text.rank-label')].map(t => {
      const b = t.getBoundingClientRect();
      return {text: t.textContent, x: b.x, y: b.y, w: b.width, h: b.height}; });
    const axis = d.querySelector('#axis-days');
    r.days_scale = axis ? axis.dataset.scale : null;
    r.day_ticks = axis ? [...axis.querySelectorAll('text')].map(t => t.textContent) : [];
    r.days = [...d.querySelectorAll('#chart-scaling circle title')].map(t => t.textContent)
      .filter(t => t.includes(' days')).map(t => parseFloat(t.split(': ')[1]));
    r.scaling_text = d.getElementById('scaling').textContent;
    for (const t of d.querySelectorAll('table')) {
      r.tables[t.id] = [t.querySelectorAll('th').length,
                        t.querySelectorAll('tfoot.definitions tr').length];
    }
    r.costs = [...d.querySelectorAll('#scaling-table td.cost')].map(c => c.textContent);
    out[f.id] = r;
  }
  const pre = document.createElement('pre'); pre.id = 'result';
  pre.textContent = JSON.stringify(out); document.body.appendChild(pre);
});
"""


def png_pixels(path):
    """Decodes an 8-bit RGB/RGBA non-interlaced PNG (what Chromium writes) with zlib only."""
    data = open(path, "rb").read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, width, height, ctype = 8, b"", 0, 0, 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and interlace == 0 and ctype in (2, 6), "unsupported PNG"
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    bpp = 4 if ctype == 6 else 3
    raw = zlib.decompress(idat)
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(height):
        f = raw[i]
        line = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = line[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                line[x] = (line[x] + a) & 255
            elif f == 2:
                line[x] = (line[x] + b) & 255
            elif f == 3:
                line[x] = (line[x] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                line[x] = (line[x] + pr) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    parallax, out_dir = sys.argv[1], sys.argv[2]
    save = sys.argv[sys.argv.index("--save-screenshot") + 1] if "--save-screenshot" in sys.argv else None
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if not chromium:
        print("chromium not installed (scripts/setup installs it): skipped")
        return 77
    os.makedirs(out_dir, exist_ok=True)
    report = os.path.join(out_dir, "report.html")
    # The MT-NLG setting; GPU counts that divide its 105 layers and 35-stage pipelines.
    subprocess.run([parallax, "report", "--price", "2", "--scaling-gpus", "140,280,560,1120,2240",
                    "--out", report], check=True)
    noprice = os.path.join(out_dir, "report-noprice.html")
    subprocess.run([parallax, "report", "--model", "gpt3-175b", "--gpus", "1024",
                    "--scaling-gpus", "64,128,256,512,1024,2048", "--out", noprice], check=True)

    # 1. Screenshot, not blank.
    shot = os.path.join(out_dir, "report.png")
    profile = os.path.join(out_dir, "chromium-profile")
    subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile,
                    "--window-size=1100,2600", "--screenshot=" + shot, "file://" + report],
                   check=True, capture_output=True, timeout=120)
    width, height, bpp, rows = png_pixels(shot)
    colours, ink = set(), 0
    for row in rows[::4]:
        for x in range(0, width * bpp, bpp * 4):
            px = row[x:x + 3]
            colours.add(px)
            ink += px != b"\xff\xff\xff"
    sampled = len(rows[::4]) * len(range(0, width * bpp, bpp * 4))
    print(f"screenshot {width}x{height}: {ink / sampled:.1%} non-white, {len(colours)} colours")
    ok = ink / sampled > 0.05 and len(colours) > 20

    # 2. and 3. Every chart's SVG rendered with a size and data; the issue-24 checks; in the DOM.
    wrapper = os.path.join(out_dir, "wrapper.html")
    open(wrapper, "w").write(
        "<!DOCTYPE html><html><body>"
        "<iframe id='report' src='report.html' width='1100' height='2600'></iframe>"
        "<iframe id='noprice' src='report-noprice.html' width='1100' height='2600'></iframe>"
        "<script>" + DOM_QUERY + "</script></body></html>")
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile,
                          "--allow-file-access-from-files", "--virtual-time-budget=10000",
                          "--dump-dom", "file://" + wrapper],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    start = dom.find('<pre id="result">')
    if start < 0:
        print("the DOM query did not run")
        return 1
    result = json.loads(dom[start + len('<pre id="result">'):dom.find("</pre>", start)]
                        .replace("&quot;", '"').replace("&amp;", "&"))
    for name, doc in result.items():
        for cid in CHARTS:
            c = doc["charts"].get(cid)
            print(name, cid, c)
            if not c or c["w"] < 100 or c["h"] < 50 or c["marks"] < 2:
                print(f"{name} {cid}: not rendered with data")
                ok = False
            elif c["legend_items"] < 2:
                print(f"{name} {cid}: no legend")
                ok = False
        labels = doc["rank_labels"]
        print(name, "rank labels:", [l["text"] for l in labels])
        for i, a in enumerate(labels):
            for b in labels[i + 1:]:
                if a["x"] < b["x"] + b["w"] and b["x"] < a["x"] + a["w"] and \
                        a["y"] < b["y"] + b["h"] and b["y"] < a["y"] + a["h"]:
                    print(f"{name}: rank labels overlap: {a} {b}")
                    ok = False
        if len(labels) < 2:
            print(f"{name}: fewer than 2 rank labels")
            ok = False
        days = doc["days"]
        spans = len(days) > 1 and max(days) / min(days) > 10
        print(name, "days", days, "axis", doc["days_scale"], "ticks", doc["day_ticks"])
        if doc["days_scale"] != ("log" if spans else "linear"):
            print(f"{name}: days spanning {max(days) / min(days):.1f}x drawn on a {doc['days_scale']} axis")
            ok = False
        powers = [t for t in doc["day_ticks"] if float(t) > 0 and math.log10(float(t)).is_integer()]
        if spans and len(powers) < 1:
            print(f"{name}: the log days axis lacks its powers of ten")
            ok = False
        if "20 tokens per parameter" not in doc["scaling_text"]:
            print(f"{name}: the tokens-per-parameter assumption is not beside the scaling table")
            ok = False
        for table, (th, defs) in doc["tables"].items():
            if th != defs:
                print(f"{name} {table}: {th} columns, {defs} definitions")
                ok = False
        print(name, "cost cells:", doc["costs"])
        dash = [c == "\u2014" for c in doc["costs"]]
        if not doc["costs"] or (name == "noprice") != all(dash) or (name == "report" and any(dash)):
            print(f"{name}: cost cells wrong for {'no' if name == 'noprice' else 'a'} price")
            ok = False
    if save:
        shutil.copyfile(shot, save)
    print("report renders: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
