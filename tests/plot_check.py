#!/usr/bin/env python3
"""tests/plot_check.py — check one figure written by `meshplan plot`.

    plot_check.py FILE.svg KIND [series=N] [points=N] [bars=N] [rows=N] [segments>=N]
                  [xlabel=TEXT] [ylabel=TEXT] [y2label=TEXT] [spans>=N] [refs=N]
    plot_check.py FILE.png png WIDTH HEIGHT

SVG: well-formed XML (xml.etree), the <metadata> chart of the expected figure kind, axis labels
containing the given text (their units), the expected number of series / bars / rows, and every
series' and segment's colour used by at least one drawn path or shape (cairo writes colours as
rgb(R%,G%,B%)) by its legend key and at least one more shape, so the metadata cannot claim
what was not drawn.
PNG: the signature and the IHDR width and height. Exit 0 when all hold, 1 with the reasons."""
import re
import struct
import sys
import xml.etree.ElementTree as ET

NS = "{urn:meshplan:plot}"
SVG = "{http://www.w3.org/2000/svg}"


def check_png(path, w, h):
    with open(path, "rb") as f:
        head = f.read(24)
    if head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return ["%s: not a PNG" % path]
    gw, gh = struct.unpack(">II", head[16:24])
    return [] if (gw, gh) == (w, h) else ["%s: %dx%d, expected %dx%d" % (path, gw, gh, w, h)]


def drawn_colours(root):
    """How many drawn elements use each colour (hex) to fill or stroke."""
    out = {}
    for el in root.iter():
        style = el.get("style") or ""
        seen = set()
        for m in re.finditer(r"(?:fill|stroke):rgb\(([\d.]+)%,([\d.]+)%,([\d.]+)%\)", style):
            seen.add("#%02X%02X%02X" % tuple(round(float(v) * 255 / 100) for v in m.groups()))
        for c in seen:
            out[c] = out.get(c, 0) + 1
    return out


def check_svg(path, kind, expect):
    errs = []
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        return ["%s: not well-formed XML: %s" % (path, e)]
    if root.tag != SVG + "svg":
        return ["%s: root is %s, not svg" % (path, root.tag)]
    chart = root.find("%smetadata/%schart" % (SVG, NS))
    if chart is None:
        return ["%s: no <metadata><chart> element" % path]
    if chart.get("figure") != kind:
        errs.append("figure = %r, expected %r" % (chart.get("figure"), kind))
    if root.find(SVG + "title") is None or not (root.find(SVG + "title").text or "").strip():
        errs.append("no <title>")
    axes = {a.get("id"): a.get("label") for a in chart.findall(NS + "axis")}
    series = chart.findall(NS + "series")
    counts = {
        "series": len(series),
        "bars": len(chart.findall(NS + "bar")),
        "rows": len(chart.findall(NS + "row")),
        "segments": len(chart.findall(NS + "segment")),
        "refs": len(chart.findall(NS + "reference")),
        "spans": int(chart.find(NS + "spans").get("count")) if chart.find(NS + "spans") is not None else 0,
    }
    for key, want in expect:
        if key.endswith(">"):
            name = key[:-1]
            if counts.get(name, -1) < int(want):
                errs.append("%s = %d, expected at least %s" % (name, counts.get(name, -1), want))
        elif key in ("xlabel", "ylabel", "y2label"):
            label = axes.get({"xlabel": "x", "ylabel": "y", "y2label": "y2"}[key]) or ""
            if want not in label:
                errs.append("%s %r does not contain %r" % (key, label, want))
        elif key == "points":
            for s in series:
                if s.get("points") != want:
                    errs.append("series %r has %s points, expected %s" % (s.get("name"), s.get("points"), want))
        elif counts.get(key, -1) != int(want):
            errs.append("%s = %d, expected %s" % (key, counts.get(key, -1), want))
    colours = drawn_colours(root)
    # each series and segment: its legend key and at least one more shape (line, marker, bar, span)
    for el in series + chart.findall(NS + "segment"):
        if colours.get(el.get("color"), 0) < 2:
            errs.append("%r (colour %s) is in the metadata but only its legend key (or nothing) is drawn"
                        " in that colour" % (el.get("name"), el.get("color")))
    return ["%s: %s" % (path, e) for e in errs]


def main(argv):
    if len(argv) >= 5 and argv[2] == "png":
        errs = check_png(argv[1], int(argv[3]), int(argv[4]))
    elif len(argv) >= 3:
        expect = []
        for a in argv[3:]:
            k, _, v = a.partition("=")
            expect.append((k, v))
        errs = check_svg(argv[1], argv[2], expect)
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errs:
        print(e)
    return 1 if errs else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
