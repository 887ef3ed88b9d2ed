import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench.units import (
    DTYPE_SIZES,
    format_bytes,
    format_number,
    format_seconds,
    format_size,
    mathtext_safe,
    parse_dtype,
    parse_size,
    parse_sizes,
)

from hang import no_hang
from hostile_inputs import FAST


class TestParseSize:
    @pytest.mark.parametrize(("text", "nbytes"), [
        ("4B", 4), ("1KiB", 1024), ("64MiB", 64 * 2**20), ("1GiB", 2**30), ("1KB", 1000), ("2 MB", 2_000_000),
    ])
    def test_units(self, text, nbytes):
        """Binary and decimal units give exact byte counts."""
        assert parse_size(text) == nbytes

    @pytest.mark.parametrize("text", ["", "4", "4 bytes", "-1KiB", "1.5MiB", "0B", "1kib"])
    def test_rejects(self, text):
        """Anything but an integer and a known unit is refused with the value quoted."""
        with pytest.raises(ValueError, match="size"):
            parse_size(text)


class TestParseSizes:
    def test_list_keeps_order_and_drops_duplicates(self):
        """A comma list keeps the user's order, once each."""
        assert parse_sizes("1MiB,4B,1MiB") == [2**20, 4]

    def test_range_powers_of_two(self):
        """A range without a step doubles."""
        assert parse_sizes("1KiB..8KiB") == [1024, 2048, 4096, 8192]

    def test_range_with_step(self):
        """``:x4`` multiplies by four, stopping at or below the upper end."""
        assert parse_sizes("4B..1KiB:x4") == [4, 16, 64, 256, 1024]

    def test_shapes(self):
        """``2x3`` is the lesson's shape, kept as element counts."""
        assert parse_sizes("2x3,4B") == [(2, 3), 4]

    @pytest.mark.parametrize("text", ["1KiB..1B", "4B..1KiB:x1", "4B..1KiB:y2", "1KiB,,2KiB", "2x0"])
    def test_rejects(self, text):
        """Backwards ranges, bad steps, empty items and empty shapes are errors."""
        with pytest.raises(ValueError):
            parse_sizes(text)


class TestFormat:
    @pytest.mark.parametrize(("nbytes", "label"), [(4, "4B"), (24, "24B"), (1024, "1KiB"), (1536, "1536B"),
                                                   (64 * 2**20, "64MiB"), (2**30, "1GiB")])
    def test_format_size_exact(self, nbytes, label):
        """Labels are exact and round-trip through parse_size."""
        assert format_size(nbytes) == label
        assert parse_size(label) == nbytes

    def test_format_bytes_rounds(self):
        """Prose labels round to three digits."""
        assert format_bytes(1536) == "1.5 KiB"
        assert format_bytes(0) == "0 B"


def test_parse_dtype():
    """Dtype names are accepted with or without the ``torch.`` prefix."""
    assert parse_dtype("torch.float16") == "float16"
    with pytest.raises(ValueError, match="float32"):
        parse_dtype("float8")


def test_first_line_of_an_error():
    """Long torch messages are cut to their first line; an empty one gives the type's name."""
    from xferbench.units import first_line

    assert first_line(RuntimeError("CUDA out of memory.\nTried to allocate 1 GiB")) == "CUDA out of memory."
    assert first_line(TimeoutError()) == "TimeoutError"


class TestSizeEdges:
    def test_one_byte_is_a_size(self):
        """``1B`` is the smallest size a user can ask for, not an error."""
        assert parse_size("1B") == 1

    @pytest.mark.parametrize(("text", "message"), [
        ("0B", r"'0B' is not a positive size"),
        ("4 bytes", r"'4 bytes' is not a size; write it like 4B, 1KiB"),
    ])
    def test_rejection_names_the_value_and_the_fix(self, text, message):
        """The error quotes what the user typed and says what would be accepted."""
        with pytest.raises(ValueError, match=message):
            parse_size(text)

    def test_explicit_x2_step(self):
        """``:x2`` is the smallest step allowed and doubles, like no step at all."""
        assert parse_sizes("4B..16B:x2") == [4, 8, 16]

    def test_range_of_one_size(self):
        """A range whose ends are equal is that one size, not an error."""
        assert parse_sizes("4B..4B") == [4]

    def test_shape_with_spaces(self):
        """``2 x 3`` is the same shape as ``2x3``."""
        assert parse_sizes("2 x 3") == [(2, 3)]

    @pytest.mark.parametrize(("text", "message"), [
        ("1KiB..1B", r"'1KiB\.\.1B': the range must go from small to large"),
        ("4B..1KiB:x1", r"'4B\.\.1KiB:x1': the step after ':' must be like x2 or x4"),
        ("4B..1KiB:y2", r"the step after ':' must be like x2"),
        ("4B..1KiB..2KiB", r"'1KiB\.\.2KiB' is not a size"),
        ("1KiB,,2KiB", r"'1KiB,,2KiB' has an empty item"),
        ("2x0", r"'2x0': a shape needs every dimension >= 1"),
    ])
    def test_rejection_messages(self, text, message):
        """Each mistake in --xfer-sizes gets an error that quotes the item and names the rule broken."""
        with pytest.raises(ValueError, match=message):
            parse_sizes(text)

    def test_unknown_dtype_lists_the_choices(self):
        """The error lists the accepted dtypes, comma-separated, so the user can pick one."""
        with pytest.raises(ValueError, match=r"'float8' is not a supported dtype; choose from float64, float32, float16"):
            parse_dtype("float8")


class TestFormatBytesEdges:
    @pytest.mark.parametrize(("nbytes", "label"), [
        (1, "1 B"), (1023, "1023 B"), (1024, "1 KiB"), (2**20, "1 MiB"), (3 * 2**30, "3 GiB"), (2**40, "1 TiB"),
    ])
    def test_boundaries(self, nbytes, label):
        """Exactly one KiB is ``1 KiB`` (not ``1024 B``); one byte is ``1 B`` (not ``0 B``)."""
        assert format_bytes(nbytes) == label

    @pytest.mark.parametrize("nbytes", [float("nan"), -5.0, -0.0])
    def test_nothing_measured_reads_zero(self, nbytes):
        """A NaN or negative size (a failed fit, a subtraction) shows as ``0 B``, never ``nan B`` or ``-5 B``."""
        assert format_bytes(nbytes) == "0 B"


class TestFormatSeconds:
    @pytest.mark.parametrize(("seconds", "label"), [
        (2.5, "2.5 s"), (1.0, "1 s"), (0.0025, "2.5 ms"), (1e-3, "1 ms"), (85.4e-6, "85.4 µs"), (1e-6, "1 µs"),
        (245e-9, "245 ns"), (0.0, "0 ns"), (123.456e-3, "123 ms"), (0.5e-9, "0.5 ns"), (1.39e-17, "0 ns"),
        (-2.35e-16, "0 ns"),
    ])
    def test_picks_the_unit_that_reads_best(self, seconds, label):
        """Times read in the largest unit with a value of at least 1, to three significant digits; under a picosecond
        (a float's last bits on the simulated machine's constant times: "0.0000000139 ns") reads 0."""
        assert format_seconds(seconds) == label

    @pytest.mark.parametrize("seconds", [None, float("nan"), float("inf")])
    def test_missing_is_a_dash(self, seconds):
        """A case that was not measured shows a dash, not ``nan ns`` or ``inf s``."""
        assert format_seconds(seconds) == "–"


class TestRoundingChoosesTheUnit:
    @pytest.mark.parametrize(("seconds", "label"), [
        (999.7e-9, "1 µs"), (999.4e-9, "999 ns"), (999.7e-6, "1 ms"), (0.99951, "1 s"), (1000.0, "1000 s"), (1500.0, "1500 s"),
        (-5e-3, "-5 ms"),
    ])
    def test_seconds_never_in_exponent_notation(self, seconds, label):
        """A time that rounds up to 1000 of a unit reads as 1 of the next (``1 µs``, never ``1e+03 ns``)."""
        assert format_seconds(seconds) == label

    @pytest.mark.parametrize(("nbytes", "label"), [
        (1023.9 * 1024, "1 MiB"), (1000 * 1024, "0.977 MiB"), (999 * 1024, "999 KiB"), (1023.4, "1023 B"),
        (1023.5, "1 KiB"), (1023.6, "1 KiB"), (1023.99 * 2**30, "1 TiB"), (2000 * 2**40, "2000 TiB"),
    ])
    def test_bytes_never_in_exponent_notation(self, nbytes, label):
        """A size that rounds to 1000 or more of a unit moves up one (``1 MiB``, never ``1.02e+03 KiB``)."""
        assert format_bytes(nbytes) == label


def test_dollar_signs_are_escaped_for_matplotlib():
    """Every '$' of a label is escaped, so matplotlib draws it as written rather than as mathtext."""
    assert mathtext_safe("/data/$x$/a$b") == r"/data/\$x\$/a\$b"
    assert mathtext_safe("cuda:0") == "cuda:0"


@pytest.mark.hostile
class TestPlotLabels:
    @pytest.mark.parametrize("label", ["$", "cost in $", "$x$", "a $ b $ c", "\\$", "$$"])
    def test_dollar_drawn_as_written(self, label):
        """A '$' in a label is drawn as a dollar sign, not parsed as mathtext (a lone one raises)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots()
        text = ax.set_title(mathtext_safe(label))
        fig.canvas.draw()
        plt.close(fig)
        assert not text._text.replace("\\$", "").count("$")  # every dollar escaped: no mathtext


size_words = st.sampled_from(["4B", "1KiB", "64MiB", "1GB", "0B", "2x3", "1x0", "..", ":x4", "x1", ",", " ", "TiB", "-1B",
                              "99999999999999999999GiB", "4B..1GiB", "1GiB..4B", "4B..1MiB:x1", "4B..1MiB:x99"])


@pytest.mark.hostile
class TestParsers:
    @pytest.mark.slow
    @FAST
    @given(st.text(max_size=30) | st.lists(size_words, min_size=1, max_size=4).map("".join))
    def test_size_is_positive_bytes_or_value_error(self, text):
        try:
            nbytes = parse_size(text)
        except ValueError as error:
            assert "\n" not in str(error)
        else:
            assert type(nbytes) is int and nbytes > 0

    @FAST
    @given(st.integers(min_value=1, max_value=2**40), st.sampled_from(["B", "KiB", "MiB", "GiB", "KB", "MB", "GB"]))
    def test_size_reads_back_what_it_says(self, number, unit):
        factor = {"B": 1, "KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "KB": 10**3, "MB": 10**6, "GB": 10**9}[unit]
        assert parse_size(f" {number}{unit} ") == number * factor

    @FAST
    @given(st.text(max_size=40) | st.lists(size_words, min_size=1, max_size=5).map(",".join))
    def test_size_list_is_sizes_and_shapes_or_value_error(self, text):
        with no_hang(30):
            try:
                items = parse_sizes(text)
            except ValueError:
                return
        assert items and len(items) == len(set(items))
        assert all((type(i) is int and i > 0) or (isinstance(i, tuple) and i and min(i) >= 1) for i in items)

    @FAST
    @given(st.text(max_size=20) | st.sampled_from([*DTYPE_SIZES, *(f"torch.{d}" for d in DTYPE_SIZES), "float8", "torch."]))
    def test_dtype_is_known_or_value_error(self, text):
        try:
            assert parse_dtype(text) in DTYPE_SIZES
        except ValueError:
            pass


@pytest.mark.parametrize(("value", "digits", "said"), [
    (2122.6, 3, "2,123"), (12706.2, 3, "12,706"), (999.4, 3, "999"), (1000.0, 3, "1,000"), (0.331, 3, "0.331"),
    (-2500.0, 3, "-2,500"), (9999.0, 4, "9,999"), (2067.4, 4, "2,067"), (10000.0, 4, "10,000"),
    (999.96, 4, "1,000"), (150.0, 2, "150"), (0.00012345, 3, "0.000123"), (9.79e-05, 3, "0.0000979"),
    (1e-05, 3, "0.00001"), (-2.35e-07, 3, "-0.000000235")])
def test_a_figure_is_written_out_never_with_an_exponent(value, digits, said):
    """The α/β table once read "2.12e+03" GB/s and "gave 1.27e+04 GB/s": whole digits beyond ``digits`` are written
    out with thousands separated (from 1,000 at any ``digits``: a hover's "2067" sat beside a table's "2,407"), the rest
    in ``digits`` significant digits."""
    assert format_number(value, digits) == said
