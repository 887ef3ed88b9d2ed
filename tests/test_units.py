import pytest

from xferbench.units import format_bytes, format_size, parse_dtype, parse_size, parse_sizes


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
