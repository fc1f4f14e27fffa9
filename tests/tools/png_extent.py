# SPDX-License-Identifier: Apache-2.0
"""Reads a PNG screenshot (8-bit RGB or RGBA, as Chromium writes them) and
prints, for one colour, how many pixels have it and the rows and columns
they span:  png_extent.py FILE RRGGBB [TOLERANCE] [X0 Y0 X1 Y1]
Output: "count=N ymin=A ymax=B xmin=C xmax=D" (-1 when none). Standard
library only (zlib), so the browser test needs nothing installed."""
import struct
import sys
import zlib


def read_png(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit("not a PNG: " + path)
    pos, idat, w = 8, b"", 0
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        pos += 12 + n
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                raise SystemExit("unsupported PNG (depth %d, colour type %d)" % (depth, ctype))
            bpp = 3 if ctype == 2 else 4
        elif kind == b"IDAT":
            idat += body
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev, i = [], bytearray(stride), 0
    for _ in range(h):
        f, line = raw[i], bytearray(raw[i + 1:i + 1 + stride])
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
                pr = a if pa <= pb and pa <= pc else b if pb <= pc else c
                line[x] = (line[x] + pr) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def main():
    path, colour = sys.argv[1], sys.argv[2]
    tol = int(sys.argv[3]) if len(sys.argv) > 3 else 40
    w, h, bpp, rows = read_png(path)
    box = [int(v) for v in sys.argv[4:8]] if len(sys.argv) >= 8 else [0, 0, w, h]
    want = [int(colour[k:k + 2], 16) for k in (0, 2, 4)]
    count, ys, xs = 0, [], []
    for y in range(max(0, box[1]), min(h, box[3])):
        line = rows[y]
        for x in range(max(0, box[0]), min(w, box[2])):
            p = line[x * bpp:x * bpp + 3]
            if sum(abs(p[k] - want[k]) for k in range(3)) <= tol:
                count += 1
                ys.append(y)
                xs.append(x)
    print("count=%d ymin=%d ymax=%d xmin=%d xmax=%d" % (
        count, min(ys) if ys else -1, max(ys) if ys else -1,
        min(xs) if xs else -1, max(xs) if xs else -1))


main()
