"""Byte sizes, shapes and dtypes as plain values, with no torch import.

Both sides share these: the measuring side parses ``--xfer-sizes`` with them and
the analysis side formats sizes for tables and plots.
"""

from __future__ import annotations

import itertools
import math
import re

__all__ = [
    "DTYPE_SIZES",
    "Size",
    "count",
    "drawable",
    "first_line",
    "format_bytes",
    "format_number",
    "format_seconds",
    "format_size",
    "format_span",
    "mathtext_safe",
    "parse_dtype",
    "parse_size",
    "parse_sizes",
]

#: Bytes per element of every dtype the suite accepts. Kept here rather than asked
#: of torch so that the case matrix and the report work without torch.
DTYPE_SIZES: dict[str, int] = {
    "float64": 8,
    "float32": 4,
    "float16": 2,
    "bfloat16": 2,
    "int64": 8,
    "int32": 4,
    "int16": 2,
    "int8": 1,
    "uint8": 1,
}

_UNITS = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40, "KB": 10**3, "MB": 10**6, "GB": 10**9, "TB": 10**12}
_SIZE_RE = re.compile(r"^\s*(\d+)\s*([KMGT]i?B|B)\s*$")
_SHAPE_RE = re.compile(r"^\s*\d+(\s*x\s*\d+)+\s*$")

Size = tuple[int, ...]  # a shape; a byte size becomes a 1-D shape once the dtype is known


def parse_size(text: str) -> int:
    """Return the bytes of ``64MiB``, ``1KB`` or ``4B``; raise ValueError otherwise."""
    match = _SIZE_RE.match(text)
    if not match:
        raise ValueError(f"{text!r} is not a size; write it like 4B, 1KiB, 64MiB or 1GB")
    number, unit = match.groups()  # the pattern admits only units of _UNITS
    nbytes = int(number) * _UNITS[unit]
    if nbytes <= 0:
        raise ValueError(f"{text!r} is not a positive size")
    return nbytes


def _parse_range(text: str) -> list[int]:
    """``4B..1GiB`` (powers of two) or ``4B..1GiB:x4`` (each size 4x the last)."""
    span, _, step = text.partition(":")
    low_text, high_text = span.split("..", 1)
    low, high = parse_size(low_text), parse_size(high_text)
    factor = 2
    if step:
        if not re.fullmatch(r"x\d+", step.strip()) or int(step.strip()[1:]) < 2:
            raise ValueError(f"{text!r}: the step after ':' must be like x2 or x4")
        factor = int(step.strip()[1:])
    if low > high:
        raise ValueError(f"{text!r}: the range must go from small to large")
    return list(itertools.takewhile(lambda size: size <= high, (low * factor**k for k in itertools.count())))


def parse_sizes(text: str) -> list[int | Size]:
    """Parse a comma list of byte sizes, ranges and shapes such as ``2x3``.

    Byte sizes come back as ints; shapes (element counts per dimension, the
    lesson's ``torch.ones(2, 3)``) come back as tuples. Duplicates are dropped,
    order is kept.
    """
    items: list[int | Size] = []
    for token in (t.strip() for t in text.split(",")):
        if not token:
            raise ValueError(f"{text!r} has an empty item")
        if ".." in token:
            items.extend(_parse_range(token))
        elif _SHAPE_RE.match(token):
            shape = tuple(int(d) for d in token.split("x"))  # int() ignores the spaces of "2 x 3"
            if 0 in shape:
                raise ValueError(f"{token!r}: a shape needs every dimension >= 1")
            items.append(shape)
        else:
            items.append(parse_size(token))
    return list(dict.fromkeys(items))


def parse_dtype(text: str) -> str:
    """Return a dtype name the suite knows, accepting ``torch.float32`` too."""
    name = text.strip().removeprefix("torch.")
    if name not in DTYPE_SIZES:
        raise ValueError(f"{text!r} is not a supported dtype; choose from {', '.join(DTYPE_SIZES)}")
    return name


def format_size(nbytes: int) -> str:
    """Exact binary label when there is one (``64MiB``), else bytes (``24B``)."""
    unit = next((u for u in ("TiB", "GiB", "MiB", "KiB") if nbytes >= _UNITS[u] and nbytes % _UNITS[u] == 0), "B")
    return f"{nbytes // _UNITS[unit]}{unit}"


def _three_digits(value: float) -> str:
    """Three significant digits, never an exponent (``1500``, not ``1.5e+03``)."""
    return f"{value:.3g}" if abs(value) < 1000 else f"{value:.0f}"


def format_number(value: float | None, digits: int = 3) -> str:
    """A table's or a sentence's figure in ``digits`` significant digits, never an exponent (``0.0000979``), thousands always
    separated: ``2,123`` where it has as many whole digits or more (not ``2.12e+03`` nor, at 4 digits, ``2123``),
    ``12,706`` (not ``1.27e+04``), ``0.331``; ``–`` for none, or one not finite (a fit that gave none)."""
    if value is None or not math.isfinite(value):
        return "–"
    text = f"{value:.{digits}g}"
    if "e-" in text:  # 9.79e-05 as 0.0000979: the same digits, written out
        return f"{value:.{digits - 1 - math.floor(math.log10(abs(value)))}f}".rstrip("0")  # as g drops them
    return f"{value:,.0f}" if "e+" in text or abs(float(text)) >= 1000 else text


def format_bytes(nbytes: float) -> str:
    """Rounded label for axes and prose (``1.5 MiB``).

    The unit is chosen after rounding, so a value that rounds up to the next unit is
    written in it (``1 MiB``, not ``1.02e+03 KiB``).
    """
    if nbytes <= 0 or math.isnan(nbytes):
        return "0 B"
    if nbytes < 1023.5:  # whole bytes, exact; 1023.5 and up rounds to 1024 B = 1 KiB
        return f"{nbytes:.0f} B"
    for unit in ("KiB", "MiB", "GiB"):
        label = f"{nbytes / _UNITS[unit]:.3g}"
        if float(label) < 1000:
            return f"{label} {unit}"
    return f"{_three_digits(nbytes / _UNITS['TiB'])} TiB"


def format_seconds(seconds: float | None) -> str:
    """``2.5 ms``, ``85.4 µs``, ``245 ns``; an en dash for a missing value.

    The unit is chosen after rounding: 999.7 ns reads ``1 µs``, not ``1e+03 ns``.
    """
    if seconds is None or math.isnan(seconds) or math.isinf(seconds):
        return "–"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        label = _three_digits(seconds / scale)
        if abs(float(label)) >= 1:
            return f"{label} {unit}"
    # under a picosecond is a float's last bits on a constant time (the simulated machine's IQR), not a time
    return f"{format_number(seconds * 1e9) if abs(seconds) >= 1e-12 else 0} ns"


def percent(share: float) -> str:
    """A share as a whole percent, or one decimal below 1% (a step of 0.07% is not "0%")."""
    return f"{share:.0%}" if abs(share) >= 0.01 else f"{share:.1%}"


def percent_span(low: float, high: float, alike: str | None = None) -> str:
    """``69-81%``: two shares, written by ``percent``; one figure where they read alike (``alike`` instead, if given:
    a ladder step of a cost model's exact figures prints no interval)."""
    ends = percent(low), percent(high)
    if ends[0] == ends[1]:
        return ends[0] if alike is None else alike
    return f"{ends[0]} to {ends[1]}" if low < 0 else f"{ends[0][:-1]}-{ends[1]}"


def format_span(low: str, high: str) -> str:
    """``14-15 µs``, ``87.4-123 KiB``: two figures written by one of the formatters above, the unit once where they
    share it; one figure where they read alike."""
    if low == high:
        return low
    return f"{low.split()[0]}-{high}" if low.split()[-1] == high.split()[-1] else f"{low}-{high}"


def count(n: float, noun: str) -> str:
    """``1 case``, ``12 cases``: a count and its noun, plural unless it is one (every noun the report counts takes -s)."""
    return f"{int(n):,} {noun}{'' if n == 1 else 's'}"


def first_line(error: BaseException) -> str:
    """An error's message cut to its first line (torch's run to pages), or its type's name."""
    text = str(error).strip()
    return text.splitlines()[0] if text else type(error).__name__


#: What a figure must not draw as itself: C0 and C1 controls but the newline (a label's line break), DEL, the line
#: separators and the bidi controls. matplotlib writes them into the SVG, which XML refuses (the page crashed), and
#: warns of a missing glyph into the CI log.
_UNDRAWABLE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069]")
#: A ``$`` no backslash escapes: what matplotlib counts as mathtext (``$x$`` laid out as math; bad math raises).
_MATH = re.compile(r"(?<!\\)\$")


def drawable(text: str) -> str:
    """``text`` for a figure (a label, a hover title): each control but the newline written as its code (``\\x1b``)."""
    return _UNDRAWABLE.sub(lambda m: f"\\x{ord(m.group(0)):02x}" if ord(m.group(0)) < 0x100
                           else f"\\u{ord(m.group(0)):04x}", text)


def mathtext_safe(label: str) -> str:
    """A label matplotlib draws as written: ``$`` escaped (it would start mathtext, and bad math raise), each control
    written as its code (``drawable``). Applying it twice changes nothing, so every figure's text can pass it again."""
    return _MATH.sub(r"\\$", drawable(label))
