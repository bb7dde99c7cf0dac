#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Reads what the flame graph tests need out of a browser's output.

  flamecheck.py png FILE         pixels of a PNG screenshot: "total nonbg warm aqua"
                                 (decoded here with zlib: no PIL on the machine)
  flamecheck.py frames DOM NAME  the frames called NAME in a --dump-dom of the SVG,
                                 one line each: "x width depth s w classes fill new"
  flamecheck.py attr DOM ID ATTR an attribute of the <svg> (ID svg) or of the element with id or class ID
  flamecheck.py text DOM CLASS   the text of the first <text class=CLASS>
"""
import html
import re
import struct
import sys
import zlib


def png_pixels(path):
    data = open(path, 'rb').read()
    if data[:8] != b'\x89PNG\r\n\x1a\n':
        sys.exit('not a PNG: ' + path)
    pos, idat, w = 8, b'', 0
    while pos < len(data):
        n, kind = struct.unpack('>I4s', data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b'IHDR':
            w, h, depth, ctype, _, _, interlace = struct.unpack('>IIBBBBB', body)
            if depth != 8 or ctype not in (2, 6) or interlace:
                sys.exit('unsupported PNG: depth %d colour type %d interlace %d' % (depth, ctype, interlace))
            bpp = 3 if ctype == 2 else 4
        elif kind == b'IDAT':
            idat += body
        pos += 12 + n
    raw = zlib.decompress(idat)
    stride = w * bpp
    prev = bytearray(stride)
    rows = []
    for y in range(h):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1:
                line[i] = (line[i] + a) & 255
            elif f == 2:
                line[i] = (line[i] + b) & 255
            elif f == 3:
                line[i] = (line[i] + (a + b) // 2) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(line)
        prev = line
    return w, h, bpp, rows


def cmd_png(path):
    w, h, bpp, rows = png_pixels(path)
    total = nonbg = warm = aqua = 0
    for line in rows:
        for x in range(w):
            r, g, b = line[x * bpp], line[x * bpp + 1], line[x * bpp + 2]
            total += 1
            if (r, g, b) != (255, 255, 255) and (r, g, b) != (0xf8, 0xf8, 0xf0):
                nonbg += 1
            if r >= 200 and b <= 90 and g <= 230:
                warm += 1       # user frames: red to yellow
            if r <= 100 and g >= 150 and b >= 170:
                aqua += 1       # kernel frames
    print(total, nonbg, warm, aqua)


def frames(dom):
    # <g class="f ..." s= w= d= t= [new=] n="...">...<rect x= y= width= ... fill=...
    for m in re.finditer(r'<g class="(f[^"]*)"([^>]*)>(.*?)</g>', dom, re.S):
        attrs = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
        rect = dict(re.findall(r'(\w+)="([^"]*)"', re.search(r'<rect([^>]*)>', m.group(3)).group(1)))
        yield html.unescape(attrs['n']), attrs, rect, m.group(1)


def cmd_frames(path, name):
    dom = open(path, encoding='utf-8', errors='replace').read()
    for n, a, r, cls in frames(dom):
        if n == name:
            print(r['x'], r['width'], a['d'], a['s'], a['w'], cls.replace(' ', ','), r['fill'].replace(' ', ''),
                  a.get('new', '0'))


def cmd_attr(path, ident, attr):
    dom = open(path, encoding='utf-8', errors='replace').read()
    if ident == 'svg':
        m = re.search(r'<svg\b[^>]*>', dom)
    else:
        m = re.search(r'<[^>]*(?:id|class)="%s"[^>]*>' % re.escape(ident), dom)
    if m:
        a = dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(0)))
        print(html.unescape(a.get(attr, '')))


def cmd_text(path, cls):
    dom = open(path, encoding='utf-8', errors='replace').read()
    m = re.search(r'<text class="%s"[^>]*>(.*?)</text>' % re.escape(cls), dom, re.S)
    print(html.unescape(m.group(1)) if m else '')


if __name__ == '__main__':
    {'png': cmd_png, 'frames': cmd_frames, 'attr': cmd_attr, 'text': cmd_text}[sys.argv[1]](*sys.argv[2:])
