"""What the hostile-input tests share, wherever they sit (beside the module each exercises, marked
``@pytest.mark.hostile``): the sample cut small, the CLI run as a user types it, the check that a
refusal is exit 2 with one line, and Hypothesis strategies of arbitrary JSON.
"""

import copy
import json
from pathlib import Path

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from xferbench.cli import main

DATA = Path(__file__).parent / "data"
SAMPLE = json.loads((DATA / "cpu-sample.json").read_text())
FIRST = "test_create[empty-4B-float32-cpu]"  # the sample's first benchmark
#: A few benchmarks of each kind (creation, host copy, no-op, scenario, distributed), so a report is quick.
BASE = {**SAMPLE, "benchmarks": [b for i, b in enumerate(SAMPLE["benchmarks"]) if i % 12 == 0]}



def examples(count: int) -> int:
    """A test's own number of examples, scaled as the loaded profile scales Hypothesis' default of 100 (conftest.py:
    the test command's, or 5x under tox -e fuzz)."""
    return count * settings.default.max_examples // 100


def property_settings(count: int, *checks: HealthCheck) -> settings:
    """A property test's settings: ``count`` examples (scaled), no deadline, the profile's health checks and ``checks``
    suppressed."""
    return settings(max_examples=examples(count), deadline=None,
                    suppress_health_check=[*settings.default.suppress_health_check, *checks])


FAST = property_settings(150, HealthCheck.function_scoped_fixture)
SLOW = property_settings(25, HealthCheck.function_scoped_fixture, HealthCheck.too_slow)


def small(count: int) -> dict:
    """The sample cut to a few benchmarks, a copy of its own (tests change it), so a report takes a moment."""
    return copy.deepcopy({**SAMPLE, "benchmarks": SAMPLE["benchmarks"][:count]})


def put(path: Path, document) -> Path:
    if isinstance(document, bytes):
        path.write_bytes(document)
    else:
        path.write_text(document if isinstance(document, str) else json.dumps(document))
    return path


def run_cli(capsys, *args) -> tuple[int, str, str]:
    try:
        code = main([str(a) for a in args])
    except SystemExit as exit_:  # argparse's own usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def assert_refused(code: int, err: str, *fragments: str) -> None:
    assert code == 2, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for fragment in fragments:
        assert fragment in err, err


scalars = st.none() | st.booleans() | st.integers(min_value=-(10**30), max_value=10**400) \
    | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=12)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=12)
#: Smaller JSON values, for the side files (noise files, nvbandwidth matrices).
values = st.recursive(st.none() | st.booleans() | st.integers(-(10**20), 10**20)
                      | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=6),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                      max_leaves=8)
#: Values that broke the analysis before it validated at load: zero, negative, non-finite, huge, wrong type.
hostile_numbers = st.sampled_from([0, 0.0, -1e-6, -1, 10**400, 2**64, 1e-320, "1e-6", True, None, [], {}]) \
    | st.floats(allow_nan=True, allow_infinity=True)


def mutate(document: dict, data: st.DataObject) -> dict:
    """The real run with one field replaced by an arbitrary JSON value, or deleted: half the time a
    field the analysis reads (a statistic, the contract, the run's header), else one anywhere."""
    document = copy.deepcopy(document)
    if data.draw(st.booleans()):
        bench = data.draw(st.sampled_from(document["benchmarks"]))
        holder = data.draw(st.sampled_from([bench["stats"], bench["extra_info"], bench, document]))
        key = data.draw(st.sampled_from(sorted(holder)))
        holder[key] = data.draw(hostile_numbers | json_values)
        return document
    holder: object = document
    while True:
        keys = list(holder) if isinstance(holder, dict) else list(range(len(holder)))  # type: ignore[arg-type]
        if not keys:
            return document
        key = data.draw(st.sampled_from(keys))
        child = holder[key]  # type: ignore[index]
        if not isinstance(child, dict | list) or not child or data.draw(st.booleans()):
            break
        holder = child
    if isinstance(holder, dict) and data.draw(st.booleans()):
        del holder[key]
    else:
        holder[key] = data.draw(json_values)  # type: ignore[index]
    return document


def dump(document) -> str:
    try:
        return json.dumps(document)
    except ValueError:  # an integer past Python's digit limit: write it as a string of digits
        return json.dumps(document, default=str)
