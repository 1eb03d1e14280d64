"""A small PNG reader for the report's screenshot test: chunks, zlib, filter reconstruction, RGB rows.

Reads 8-bit non-interlaced greyscale, grey+alpha, RGB, RGBA and palette images (what a browser writes) and
returns RGB rows; alpha is dropped. The common filters are done on whole rows at once (Up with a
carry-free byte-wise add on big integers, Sub with a running sum per channel), so a 1400x2000 screenshot
decodes in well under a second unless it is full of Average or Paeth rows.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from itertools import accumulate

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}   # colour type -> samples per pixel


@dataclass
class Image:
    width: int
    height: int
    rows: list[bytes]   # RGB, 3 bytes per pixel

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        row = self.rows[y]
        return row[3 * x], row[3 * x + 1], row[3 * x + 2]


def _add_bytes(a: bytes, b: bytes) -> bytes:
    """Byte-wise (a + b) mod 256 for equal-length strings, via one carry-free big-integer add."""
    n = len(a)
    if n == 0:
        return b""
    low7 = int.from_bytes(b"\x7f" * n, "big")
    high = int.from_bytes(b"\x80" * n, "big")
    x, y = int.from_bytes(a, "big"), int.from_bytes(b, "big")
    return (((x & low7) + (y & low7)) ^ ((x ^ y) & high)).to_bytes(n, "big")


def _unfilter_sub(line: bytes, bpp: int) -> bytes:
    out = bytearray(len(line))
    mask = (255).__and__
    for channel in range(bpp):
        out[channel::bpp] = bytes(map(mask, accumulate(line[channel::bpp])))
    return bytes(out)


def _unfilter_average(line: bytes, prior: bytes, bpp: int) -> bytes:
    out = bytearray(line)
    for i in range(len(out)):
        left = out[i - bpp] if i >= bpp else 0
        out[i] = (out[i] + ((left + prior[i]) >> 1)) & 255
    return bytes(out)


def _unfilter_paeth(line: bytes, prior: bytes, bpp: int) -> bytes:
    out = bytearray(line)
    for i in range(len(out)):
        if i >= bpp:
            a, c = out[i - bpp], prior[i - bpp]
        else:
            a = c = 0
        b = prior[i]
        p = a + b - c
        pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
        predictor = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
        out[i] = (out[i] + predictor) & 255
    return bytes(out)


def _to_rgb(line: bytes, colour_type: int, palette: bytes) -> bytes:
    if colour_type == 2:
        return line
    if colour_type == 6:
        out = bytearray(len(line) // 4 * 3)
        for channel in range(3):
            out[channel::3] = line[channel::4]
        return bytes(out)
    if colour_type in (0, 4):
        grey = line[:: 2 if colour_type == 4 else 1]
        out = bytearray(len(grey) * 3)
        for channel in range(3):
            out[channel::3] = grey
        return bytes(out)
    return b"".join(palette[3 * index: 3 * index + 3] for index in line)   # colour type 3


def decode_png(data: bytes) -> Image:
    if not data.startswith(SIGNATURE):
        raise ValueError("not a PNG file (bad signature)")
    offset, header, palette, compressed = len(SIGNATURE), None, b"", []
    while offset < len(data):
        length, kind = struct.unpack(">I4s", data[offset: offset + 8])
        body = data[offset + 8: offset + 8 + length]
        crc = struct.unpack(">I", data[offset + 8 + length: offset + 12 + length])[0]
        if zlib.crc32(kind + body) != crc:
            raise ValueError(f"PNG chunk {kind!r} at byte {offset}: CRC mismatch")
        offset += 12 + length
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"PLTE":
            palette = body
        elif kind == b"IDAT":
            compressed.append(body)
        elif kind == b"IEND":
            break
    if header is None:
        raise ValueError("PNG has no IHDR chunk")
    width, height, depth, colour_type, _, _, interlace = header
    if depth != 8 or colour_type not in CHANNELS or interlace:
        raise ValueError(f"unsupported PNG: bit depth {depth}, colour type {colour_type}, interlace {interlace}")
    bpp = CHANNELS[colour_type]
    stride = width * bpp
    raw = zlib.decompress(b"".join(compressed))
    if len(raw) != height * (stride + 1):
        raise ValueError(f"PNG data is {len(raw)} bytes, expected {height * (stride + 1)}")
    prior, rows = bytes(stride), []
    for y in range(height):
        start = y * (stride + 1)
        kind, line = raw[start], raw[start + 1: start + 1 + stride]
        if kind == 0:
            current = line
        elif kind == 1:
            current = _unfilter_sub(line, bpp)
        elif kind == 2:
            current = _add_bytes(line, prior)
        elif kind == 3:
            current = _unfilter_average(line, prior, bpp)
        elif kind == 4:
            current = _unfilter_paeth(line, prior, bpp)
        else:
            raise ValueError(f"PNG row {y}: unknown filter type {kind}")
        rows.append(_to_rgb(current, colour_type, palette))
        prior = current
    return Image(width, height, rows)


def colour_blocks(image: Image, rgb: tuple[int, int, int], min_width: int, min_height: int,
                  min_run: int = 4) -> list[tuple]:
    """Rectangles filled with one exact colour, at least min_width x min_height: [(x0, y0, x1, y1), ...].

    Runs of at least min_run pixels of the colour are found row by row and stacked into blocks while
    consecutive rows have a run overlapping the block, so text drawn inside a padded cell does not split it.
    """
    pattern = bytes(rgb) * min_run
    open_blocks: list[list[int]] = []   # [x0, y0, x1, last_y]
    done = []
    for y, row in enumerate(image.rows):
        runs, search = [], 0
        while True:
            at = row.find(pattern, search)
            if at < 0:
                break
            if at % 3:
                search = at + 1
                continue
            end = at + len(pattern)
            while row[end: end + 3] == bytes(rgb):
                end += 3
            runs.append((at // 3, end // 3))
            search = end
        still_open = []
        for block in open_blocks:
            overlap = [r for r in runs if r[0] < block[2] and r[1] > block[0]]
            if overlap:
                block[0] = min(block[0], *(r[0] for r in overlap))
                block[2] = max(block[2], *(r[1] for r in overlap))
                block[3] = y
                runs = [r for r in runs if r not in overlap]
                still_open.append(block)
            else:
                done.append(block)
        open_blocks = still_open + [[x0, y, x1, y] for x0, x1 in runs]
    done += open_blocks
    return [(x0, y0, x1, y1 + 1) for x0, y0, x1, y1 in done if y1 + 1 - y0 >= min_height and x1 - x0 >= min_width]
