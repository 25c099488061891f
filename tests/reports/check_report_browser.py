#!/usr/bin/env python3
"""Renders a Parallax HTML report in headless Chromium and checks that it is really drawn.

1. A screenshot of the report is not blank: a good share of its pixels is not background, and
   several distinct colours appear (the charts' palette).
2. Every chart's SVG has rendered with a real size and data inside, queried in the browser's DOM
   through a test-only wrapper page (the report itself has no scripts).

Usage: check_report_browser.py PARALLAX_BIN OUT_DIR [--save-screenshot PNG]
Exit 0 on success, 1 on a failed check, 77 (ctest: skipped) when Chromium is not installed.
"""
import json
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
    subprocess.run([parallax, "report", "--price", "2", "--out", report], check=True)

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

    # 2. Every chart's SVG rendered with a size and data, queried in the DOM.
    wrapper = os.path.join(out_dir, "wrapper.html")
    open(wrapper, "w").write(
        "<!DOCTYPE html><html><body><iframe id='r' src='report.html' width='1100' height='2600'>"
        "</iframe><script>window.addEventListener('load', () => {"
        "const d = document.getElementById('r').contentDocument; const out = {};"
        "for (const s of d.querySelectorAll('svg.chart')) { const b = s.getBoundingClientRect();"
        "out[s.id] = {w: b.width, h: b.height, marks: s.querySelectorAll('rect,circle,polyline').length}; }"
        "const pre = document.createElement('pre'); pre.id = 'result';"
        "pre.textContent = JSON.stringify(out); document.body.appendChild(pre); });"
        "</script></body></html>")
    dom = subprocess.run([chromium, *CHROMIUM_FLAGS, "--user-data-dir=" + profile,
                          "--allow-file-access-from-files", "--virtual-time-budget=10000",
                          "--dump-dom", "file://" + wrapper],
                         check=True, capture_output=True, text=True, timeout=120).stdout
    start = dom.find('<pre id="result">')
    if start < 0:
        print("the DOM query did not run")
        return 1
    charts = json.loads(dom[start + len('<pre id="result">'):dom.find("</pre>", start)]
                        .replace("&quot;", '"'))
    for cid in CHARTS:
        c = charts.get(cid)
        print(cid, c)
        if not c or c["w"] < 100 or c["h"] < 50 or c["marks"] < 2:
            print(f"{cid}: not rendered with data")
            ok = False
    if save:
        shutil.copyfile(shot, save)
    print("report renders: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
