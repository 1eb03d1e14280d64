"""The screenshot test's PNG reader against images filtered here, one filter type per row."""

from __future__ import annotations

import random
import struct
import zlib

import pytest
from png import SIGNATURE, colour_blocks, decode_png


def paeth(a: int, b: int, c: int) -> int:
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def filter_row(kind: int, row: bytes, prior: bytes, bpp: int) -> bytes:
    out = bytearray()
    for i, x in enumerate(row):
        a = row[i - bpp] if i >= bpp else 0
        b = prior[i]
        c = prior[i - bpp] if i >= bpp else 0
        predictor = [0, a, b, (a + b) // 2, paeth(a, b, c)][kind]
        out.append((x - predictor) & 255)
    return bytes([kind]) + bytes(out)


def chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def encode(width: int, rows: list[bytes], colour_type: int, palette: bytes = b"") -> bytes:
    bpp = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour_type]
    prior, data = bytes(width * bpp), b""
    for y, row in enumerate(rows):
        data += filter_row(y % 5, row, prior, bpp)
        prior = row
    header = struct.pack(">IIBBBBB", width, len(rows), 8, colour_type, 0, 0, 0)
    return (SIGNATURE + chunk(b"IHDR", header) + (chunk(b"PLTE", palette) if palette else b"")
            + chunk(b"IDAT", zlib.compress(data)) + chunk(b"IEND", b""))


@pytest.mark.parametrize("colour_type", [0, 2, 3, 4, 6])
def test_every_filter_and_colour_type_round_trips(colour_type):
    rng = random.Random(colour_type)
    width, height, bpp = 13, 11, {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}[colour_type]
    palette = bytes(rng.randrange(256) for _ in range(3 * 16)) if colour_type == 3 else b""
    top = 16 if colour_type == 3 else 256
    rows = [bytes(rng.randrange(top) for _ in range(width * bpp)) for _ in range(height)]
    image = decode_png(encode(width, rows, colour_type, palette))
    assert (image.width, image.height) == (width, height)
    for y, row in enumerate(rows):
        for x in range(width):
            if colour_type == 2:
                expected = tuple(row[3 * x: 3 * x + 3])
            elif colour_type == 6:
                expected = tuple(row[4 * x: 4 * x + 3])
            elif colour_type == 3:
                expected = tuple(palette[3 * row[x]: 3 * row[x] + 3])
            else:
                expected = (row[x * (bpp)],) * 3
            assert image.pixel(x, y) == expected


def test_bad_input_is_refused():
    with pytest.raises(ValueError, match="signature"):
        decode_png(b"GIF89a")
    good = encode(2, [b"\x00" * 6, b"\x01" * 6], 2)
    broken = good[:40] + bytes([good[40] ^ 1]) + good[41:]
    with pytest.raises(ValueError, match="CRC"):
        decode_png(broken)


def test_colour_blocks_keeps_a_cell_whole_around_its_text():
    green, white = (26, 127, 55), (255, 255, 255)
    rows = []
    for y in range(40):
        pixels = [white] * 200
        if 5 <= y < 35:
            pixels[10:150] = [green] * 140
            if 15 <= y < 25:                      # "text" inside the cell, padding left alone
                pixels[20:140] = [white] * 120
        rows.append(b"".join(bytes(p) for p in pixels))
    image = decode_png(encode(200, rows, 2))
    assert colour_blocks(image, green, min_width=100, min_height=20) == [(10, 5, 150, 35)]
    assert colour_blocks(image, green, min_width=200, min_height=20) == []
