#!/usr/bin/env python3
"""web-check.py: checks on a commap report page or SVG for the web tests.

  web-check.py svgs FILE [ID...]    every <svg>...</svg> in FILE parses as
                                    XML (xml.etree); each ID is the id of one
  web-check.py count FILE REGEX     print the number of matches
  web-check.py png FILE             exit 0 if the PNG has more than one
                                    colour (zlib-decoded, no PIL)
"""
import re
import struct
import sys
import xml.etree.ElementTree as ET
import zlib


def svgs(path, ids):
    text = open(path, encoding="utf-8").read()
    found = re.findall(r"<svg\b.*?</svg>", text, re.S)
    if not found:
        sys.exit("no <svg> element in %s" % path)
    seen = set()
    for s in found:
        root = ET.fromstring(s)   # raises on malformed XML
        if not root.tag.endswith("svg"):
            sys.exit("root is %s" % root.tag)
        seen.add(root.get("id"))
    missing = [i for i in ids if i not in seen]
    if missing:
        sys.exit("missing svg ids: %s (have %s)" % (missing, sorted(seen)))
    return len(found)


def png_not_blank(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("not a PNG")
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype = struct.unpack(">IIBB", body[:10])
            if depth != 8 or ctype not in (2, 6):
                sys.exit("unexpected PNG type %d/%d" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    colours = set()
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
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
        for x in range(0, stride, bpp * 7):
            colours.add(bytes(line[x:x + 3]))
        prev = line
    print("%dx%d, %d colours sampled" % (w, h, len(colours)))
    sys.exit(0 if len(colours) > 8 else 1)


if __name__ == "__main__":
    cmd, path = sys.argv[1], sys.argv[2]
    if cmd == "svgs":
        svgs(path, sys.argv[3:])
    elif cmd == "count":
        print(len(re.findall(sys.argv[3], open(path, encoding="utf-8").read(),
                             re.S)))
    elif cmd == "png":
        png_not_blank(path)
    else:
        sys.exit("unknown command " + cmd)
