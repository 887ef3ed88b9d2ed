"""pytest plugin: ``--xfer-*`` options, the case matrix, and pytest-benchmark hooks.

Loaded by ``bench/conftest.py`` (``pytest_plugins``) or ``-p xferbench.measure.session.plugin``.
torch is imported only when a session configures, so merely installing the
package costs other pytest runs nothing.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any

import pytest

from ...contract import ContractError, Identity, identity_from, machine_differences, simulation_mismatch
from ...units import format_size, parse_dtype, parse_sizes
from ..cases import PEER_PAIRS, PROFILES, Case, PeerPlan, PlannedCase, Skipped, accelerators, build_cases, core_ops, peer_plan
from ..families.registry import SCENARIO_FAMILIES
from ..families.registry import plan as plan_scenario_family
from ..hardware.devices import DeviceBackend, TorchBackend, Wedged, available_devices, host_memory_available, parse_device_list
from ..hardware.machine import fingerprint, load_snapshot, run_facts
from ..record.pytest_benchmark_adapter import MIN_PYTEST_BENCHMARK
from .blocks import BLOCKS, PAIRED_ROUNDS, block_of, block_params, blocked_ids
from .names import plain_names
from .settings import XferSettings, configured, settings, store
from .summary import pytest_benchmark_update_json as keep_for_summary
from .summary import pytest_terminal_summary  # noqa: F401  (key findings at the end)

__all__ = ["XferHookspecs", "XferSettings"]

#: Run-time state (clocks, caches, pinned cache), the run journal, the run-time estimate, the case order
#: (--xfer-shuffle), the cases measured in blocks (the references, --xfer-blocks) and those run (--xfer-only).
pytest_plugins = (
    "xferbench.measure.session.run_state",
    "xferbench.measure.record.journal",
    "xferbench.measure.session.estimate",
    "xferbench.measure.session.order",
    "xferbench.measure.session.blocks",
    "xferbench.measure.session.only",
)

#: ``--benchmark-max-time`` each profile uses unless the user gives one: enough
#: rounds for a stable median (a few hundred 1 ms rounds), and a full sweep on one GPU inside a few minutes;
#: the quick run within a minute on a 2-core CPU-only machine.
PROFILE_MAX_TIME = {"quick": "0.25", "full": "0.25"}
#: ``--benchmark-precision`` each profile uses unless the user gives one (pytest-benchmark's own adaptive
#: rounds): after --benchmark-min-rounds, a case stops once the 99% interval of its mean round is within
#: ±1% (--benchmark-confidence), else at --benchmark-max-time. A stable case stops after a few rounds, a
#: noisy one keeps the time the profile allows it; the full profile's cost on a big box is mostly the former.
PROFILE_PRECISION = {"quick": None, "full": 0.01}
#: ``--benchmark-min-time`` unless the user gives one: a tiny call (a no-op, a
#: 4-byte copy) is repeated until a round lasts 1 ms, so the timer's own overhead
#: (tens of ns a reading) is far below 1% of a round and each benchmark keeps a
#: few hundred rounds rather than a hundred thousand.
DEFAULT_MIN_TIME = "0.001"
#: Under --xfer-simulate: simulated figures repeat exactly (or with the spec's seeded
#: noise), so 20 ms of simulated time per case, in rounds of 0.1 ms, is plenty; it keeps
#: a simulated quick run within a minute. Cases on the host alone are timed as briefly.
SIMULATED_MAX_TIME, SIMULATED_MIN_TIME = "0.02", "0.0001"

class XferHookspecs:
    @pytest.hookspec(firstresult=True)
    def pytest_xfer_make_backend(self, config: pytest.Config) -> DeviceBackend | None:
        """Return the device backend to measure with; tests return fakes here."""


def _dtypes_option(text: str) -> list[str]:
    return list(dict.fromkeys(parse_dtype(t) for t in text.split(",") if t.strip())) or [parse_dtype(text)]


def _profile_option(text: str) -> str:
    if text not in PROFILES:
        raise ValueError(f"invalid choice: {text!r} (choose from {', '.join(map(repr, sorted(PROFILES)))})")
    return text


def _parse_options(config: pytest.Config) -> None:
    """Parse the ``--xfer-*`` values given as text. Not argparse's ``type=`` / ``choices=``: pytest prints
    their refusal over four lines (usage, error, inifile, rootdir); here it is one, exit 4 all the same."""
    from ..distributed.options import OPTIONS

    parsers: dict[str, tuple[str, Callable[[str], Any]]] = {
        "xfer_sizes": ("--xfer-sizes", parse_sizes), "xfer_dtypes": ("--xfer-dtypes", _dtypes_option),
        "xfer_profile": ("--xfer-profile", _profile_option),
        **{f"xfer_dist_{o.dest}": (f"--xfer-dist-{o.name}", o.check) for o in OPTIONS}}
    for dest, (flag, parse) in parsers.items():
        value = getattr(config.option, dest, None)
        if isinstance(value, str):  # given, or a default written as text; parsed defaults are left as they are
            try:
                setattr(config.option, dest, parse(value))
            except ValueError as error:
                raise pytest.UsageError(f"argument {flag}: {error}") from None


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(XferHookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("xferbench", "xferbench: tensor creation and transfer benchmarks")
    group.addoption("--xfer-devices", default="all", metavar="LIST",
                    help="devices to measure: all (default) or a comma list such as cpu,cuda:0,cuda:1")
    group.addoption("--xfer-sizes", default=None, metavar="LIST",
                    help="payload sizes: 4B,1KiB,64MiB, ranges 4B..1GiB or 4B..1GiB:x4, shapes 2x3 "
                         "(default: the profile's)")
    group.addoption("--xfer-dtypes", default=["float32"], metavar="LIST",
                    help="element types, e.g. float32,float16 (default: float32)")
    group.addoption("--xfer-profile", default="quick", metavar="{" + ",".join(sorted(PROFILES)) + "}",
                    help="quick (default; about a minute on a CPU) or full (2x3 elements up to 1 GiB, "
                         "bounded by free memory)")
    from ..distributed.options import add_to_pytest

    add_to_pytest(group)  # --xfer-dist-*: the same table as python -m xferbench.distributed
    group.addoption("--xfer-peer-pairs", default=None, metavar="{" + ",".join(PEER_PAIRS) + "}",
                    help="peer pairs swept at every size: all, ring (each GPU to its neighbours) or one-per-class "
                         "(one pair per link class); the other pairs at the 4 sizes that fit their alpha and beta "
                         "(default: from the topology, docs/options.md)")
    group.addoption("--xfer-allow-different-machines", action="store_true",
                    help="let --benchmark-compare compare runs from different GPUs, drivers or torch versions")
    group.addoption("--xfer-simulate", default=None, metavar="SPEC.toml",
                    help="run on simulated accelerators described by a machine spec (docs/simulated-machine.md); "
                         "their figures are simulated, never measurements")


#: The dotted name of the simulated clock, as --benchmark-timer takes it.
SIMULATED_TIMER = "xferbench.measure.simulate.CLOCK"


def _simulated_backend(config: pytest.Config) -> DeviceBackend | None:
    """The simulated machine of --xfer-simulate, whose clock becomes pytest-benchmark's timer."""
    if (path := config.getoption("xfer_simulate")) is None:
        return None
    from ..simulate import SimBackend, SpecError, load_spec

    try:
        spec = load_spec(path)
    except SpecError as error:
        raise pytest.UsageError(f"--xfer-simulate={path}: {error}") from None
    if _given(config, "--benchmark-timer"):
        raise pytest.UsageError("--xfer-simulate times with the simulated clock; drop --benchmark-timer")
    if hasattr(config.option, "benchmark_timer"):
        config.option.benchmark_timer = SIMULATED_TIMER
    return SimBackend(spec)


def _given(config: pytest.Config, flag: str) -> bool:
    """Whether the user gave ``flag``: on the command line, in the ini's addopts or in PYTEST_ADDOPTS."""
    import shlex

    try:
        from_env = shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))
    except ValueError:  # unbalanced quotes: pytest itself refuses them
        from_env = []
    args = [*config.invocation_params.args, *config.getini("addopts"), *from_env]
    return any(str(a) == flag or str(a).startswith(flag + "=") for a in args)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    # Runs before pytest-benchmark's own (trylast) configure, so option defaults
    # set here are the ones its session reads.
    config.addinivalue_line("markers", "xfer(op): parametrize the test over xferbench's cases (or scenarios) of op")
    if not config.pluginmanager.hasplugin("benchmark"):
        raise pytest.UsageError("xferbench times with pytest-benchmark: it is not installed or was disabled "
                                "(-p no:benchmark); pip install pytest-benchmark and drop -p no:benchmark")
    _check_environment()
    _parse_options(config)
    config.stash[_LOAD_START] = load_snapshot()  # the machine's load is recorded around the whole run
    config.stash[_STARTED] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    backend = _simulated_backend(config) or config.hook.pytest_xfer_make_backend(config=config)
    if backend is None:
        try:
            backend = TorchBackend()
        except ImportError as error:
            raise pytest.UsageError(f"xferbench measures with torch, which cannot be imported here ({error}); "
                                    "pip install torch") from None
    try:
        devices = parse_device_list(config.getoption("xfer_devices"), available_devices(backend))
    except ValueError as error:
        raise pytest.UsageError(f"--xfer-devices={config.getoption('xfer_devices')}: {error}") from None
    profile = config.getoption("xfer_profile")
    sizes = config.getoption("xfer_sizes") or parse_sizes(PROFILES[profile])
    # pytest-benchmark's options the user did not give; every round's time saved, as xferbench compare tests
    # significance on it (a --benchmark-save-data of one's own is the same True).
    for name, value in (("max_time", SIMULATED_MAX_TIME if backend.simulated else PROFILE_MAX_TIME[profile]),
                        ("min_time", SIMULATED_MIN_TIME if backend.simulated else DEFAULT_MIN_TIME), ("save_data", True)):
        if not _given(config, "--benchmark-" + name.replace("_", "-")) and hasattr(config.option, "benchmark_" + name):
            setattr(config.option, "benchmark_" + name, value)
    if (PROFILE_PRECISION[profile] and not _given(config, "--benchmark-precision")
            and not _given(config, "--benchmark-max-time") and hasattr(config.option, "benchmark_precision")):
        # (a --benchmark-max-time of one's own keeps pytest-benchmark's fixed rounds)
        config.option.benchmark_precision = PROFILE_PRECISION[profile]
    store(config, XferSettings(backend, tuple(devices), tuple(sizes), tuple(config.getoption("xfer_dtypes")), profile,
                               _peer_plan(config, backend, devices)))


def _peer_plan(config: pytest.Config, backend: DeviceBackend, devices: Sequence[str]) -> PeerPlan | None:
    """The peer family's plan (None below two GPUs): --xfer-peer-pairs, or the default from the pairs' link
    classes (the simulated machine prices every pair alike: one class; a real machine's come from NVML,
    measure/hardware/topology.py; a backend that cannot say leaves them unknown: every pair swept)."""
    gpus, mode = accelerators(devices), config.getoption("xfer_peer_pairs")
    if mode is not None and mode not in PEER_PAIRS:
        raise pytest.UsageError(f"argument --xfer-peer-pairs: invalid choice: {mode!r} "
                                f"(choose from {', '.join(map(repr, PEER_PAIRS))})")
    if len(gpus) < 2:
        return None
    known = getattr(backend, "peer_link_classes", None)  # not asked below two GPUs: NVML and torch stay untouched
    classes: dict[tuple[str, str], str | None] = known(gpus) if known else {}
    return peer_plan(gpus, classes, mode)


def _check_environment() -> None:
    """What the run needs from its environment, refused in one line at configure time rather than mid-run."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        found = version("pytest-benchmark")
    except PackageNotFoundError:
        return  # running from a source tree: the plugin being loaded is what counts
    if tuple(int(part) for part in re.findall(r"\d+", found)[:2]) < MIN_PYTEST_BENCHMARK:
        raise pytest.UsageError(f"xferbench needs pytest-benchmark {'.'.join(map(str, MIN_PYTEST_BENCHMARK))} or "
                                f"newer, found {found}; pip install -U pytest-benchmark")


def pytest_report_header(config: pytest.Config) -> list[str]:
    s = settings(config)
    sizes = ", ".join("x".join(map(str, v)) if isinstance(v, tuple) else format_size(v) for v in s.sizes)
    return [f"xferbench: devices {', '.join(s.devices)}; profile {s.profile}; sizes {sizes}; dtypes {', '.join(s.dtypes)}"]


def _op_of(metafunc: pytest.Metafunc, known: Sequence[str]) -> str:
    marker = metafunc.definition.get_closest_marker("xfer")
    if marker is None or not marker.args or marker.args[0] not in known:
        raise pytest.UsageError(f"{metafunc.definition.nodeid}: mark it @pytest.mark.xfer(op) with op one of {', '.join(known)}")
    return marker.args[0]


def parametrize_cases(metafunc: pytest.Metafunc, argname: str, planned: Sequence[PlannedCase | Skipped],
                      blocks: Callable[[PlannedCase], int] = lambda _: 1,
                      rounds: Callable[[PlannedCase], int] = lambda _: PAIRED_ROUNDS) -> None:
    """Parametrize ``argname`` over planned cases (of any kind); skipped ones carry their reason; a case ``blocks``
    splits in two or more is one param per block of ``rounds`` rounds at least (session/blocks.py)."""
    max_time = float(getattr(metafunc.config.option, "benchmark_max_time", 1.0))
    params: list[Any] = []
    for item in planned:
        if isinstance(item, Skipped):
            params.append(pytest.param(item, id=item.id, marks=pytest.mark.skip(reason=item.reason)))
        elif (count := blocks(item)) > 1:
            params += block_params(item, count, max_time, rounds(item))
        else:
            params.append(pytest.param(item, id=item.id))
    metafunc.parametrize(argname, params)


def _real_devices(s: XferSettings) -> tuple[str, ...]:
    """The devices that exist for real: a simulated machine's accelerators do not run
    processes, so the 2-rank world runs on the host."""
    return tuple(d for d in s.devices if d == "cpu") if s.backend.simulated else s.devices


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    s = settings(metafunc.config)
    if "xfer_case" in metafunc.fixturenames:  # a core, scenario or concurrent family, by its mark
        op = _op_of(metafunc, (*core_ops(), *SCENARIO_FAMILIES))
        planned = (plan_scenario_family(op, s.devices, s.profile, s.peers) if op in SCENARIO_FAMILIES
                   else build_cases(op, s.devices, s.sizes, s.dtypes, s.peers))
        many = metafunc.config.getoption("xfer_blocks")
        blocked = blocked_ids(op, planned, paired=many == "paired")
        every = 1 if many == "paired" else int(many)
        parametrize_cases(metafunc, "xfer_case", planned, lambda case: max(every, BLOCKS) if case.id in blocked else every,
                          lambda case: blocked.get(case.id, PAIRED_ROUNDS))
    if "xfer_dist_case" in metafunc.fixturenames:
        from ..distributed import PROFILES
        from ..distributed.operations import planned_cases

        def free(kind: str) -> int | None:  # the least free memory of the two ranks' own devices
            if kind == "cpu":
                return host_memory_available()
            gpus = [int(d.split(":")[1]) for d in s.devices if d.startswith("cuda:")][:2]  # as World places them
            known = [info[0] for info in map(s.backend.memory_info, gpus) if info]
            return min(known) if len(known) == 2 else None

        chosen = metafunc.config.getoption("xfer_sizes")
        sizes = chosen or parse_sizes(PROFILES[s.profile].sizes)
        parametrize_cases(metafunc, "xfer_dist_case", planned_cases(
            _real_devices(s), metafunc.config.getoption("xfer_dist_backend"), sizes,
            metafunc.config.getoption("xfer_dist_mem_fraction"), free, plateau=not chosen))


@pytest.fixture
def xfer_backend(request: pytest.FixtureRequest) -> DeviceBackend:
    """The device backend this session measures with."""
    return settings(request.config).backend


@pytest.fixture
def xfer(benchmark: Any, xfer_backend: DeviceBackend, request: pytest.FixtureRequest) -> Callable[[PlannedCase], dict[str, Any]]:
    """Run one case of a core, scenario or concurrent family under ``benchmark``; a case the machine
    cannot run is skipped, a stuck copy fails in one line."""
    from ..families.registry import run as run_scenario_case
    from ..transfers import CannotRun, run_case

    profile = settings(request.config).profile
    block = block_of(request.node)

    def run(case: PlannedCase) -> dict[str, Any]:
        if block is not None:  # which block of the case this is: the loader merges them (analyze/load/blocks.py)
            benchmark.extra_info.update(block.extra_info())
        try:
            if isinstance(case, Case):
                return run_case(case, benchmark, xfer_backend)
            return run_scenario_case(case, benchmark, xfer_backend, profile)
        except CannotRun as reason:
            pytest.skip(f"{case.id}: {reason}")
        except Wedged as stuck:
            pytest.fail(f"{case.id}: {stuck}", pytrace=False)

    return run


@pytest.fixture
def xfer_identity(benchmark: Any) -> Callable[..., None]:
    """Name what your own benchmark times, so compare, history and the report track it
    (docs/regression-tracking.md, "Your own code"):
    ``xfer_identity("my_loader", nbytes=batch.nbytes, src="cpu", dst="cuda:0")`` before ``benchmark(...)``."""
    def record(op: str, nbytes: int, src: str, dst: str | None = None, method: str = "call", dtype: str = "uint8",
               shape: Sequence[int] | None = None) -> None:
        info = Identity(op, method, src, dst or src, nbytes, dtype, tuple(shape or (max(nbytes, 1),))).extra_info()
        try:
            identity_from(info)
        except ContractError as error:
            pytest.fail(f"xfer_identity: {error}", pytrace=False)
        benchmark.extra_info.update(info)

    return record


@pytest.fixture(scope="module")
def xfer_world(request: pytest.FixtureRequest) -> Any:
    """A world of 2 ranks on loopback: this process and a helper, for one test module
    (so the helper and its sockets are gone before other benchmarks run)."""
    from ..distributed import DistributedError, World, world_backend

    devices = _real_devices(settings(request.config))
    backend = world_backend(devices, request.config.getoption("xfer_dist_backend"))
    world = World(backend, request.config.getoption("xfer_dist_timeout"), gpus=[d for d in devices if d.startswith("cuda:")])
    try:
        world.start()
    except DistributedError as error:
        world.close()
        pytest.fail(str(error), pytrace=False)
    yield world
    world.close()


@pytest.fixture
def xfer_dist(benchmark: Any, xfer_world: Any, request: pytest.FixtureRequest) -> Callable[[Any], dict[str, Any]]:
    """Run one distributed case on the session's world; wrong data fails it."""
    from ..distributed import PROFILES, DistributedError, VerificationError
    from ..distributed.world import CaseSkipped

    profile = PROFILES[settings(request.config).profile]
    rounds = request.config.getoption("xfer_dist_rounds")

    def run(case: PlannedCase) -> dict[str, Any]:
        try:
            return xfer_world.run(case, benchmark, profile, rounds)
        except CaseSkipped as skipped:  # every rank skipped it: the world goes on
            pytest.skip(str(skipped))
        except (DistributedError, VerificationError) as error:
            pytest.fail(str(error), pytrace=False)

    return run


@pytest.hookimpl(optionalhook=True)  # so that -p no:benchmark reaches the clear message of pytest_configure
def pytest_benchmark_update_machine_info(config: pytest.Config, machine_info: dict[str, Any]) -> None:
    if not configured(config):
        return
    cache = config.stash.setdefault(_FINGERPRINT, {})
    if "value" not in cache:
        backend = settings(config).backend
        cache["value"] = fingerprint(backend)
        if backend.simulated:
            from ..simulate import SimBackend, describe

            assert isinstance(backend, SimBackend)
            describe(backend.spec, cache["value"])
    machine_info["xferbench"] = dict(cache["value"])  # what the machine is; what varies per run: xferbench_run
    if (peers := settings(config).peers) is not None:  # which peer pairs were planned at every size (--xfer-peer-pairs)
        machine_info["xferbench"]["peer_plan"] = peers.as_json()


_FINGERPRINT = pytest.StashKey[dict[str, Any]]()
_LOAD_START = pytest.StashKey[dict[str, Any]]()
_STARTED = pytest.StashKey[str]()


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_update_json(config: pytest.Config, benchmarks: list[Any], output_json: dict[str, Any]) -> None:
    """The run's own facts (boot, start, load) in one top-level key, ``xferbench_run``: machine_info stays the
    same from run to run of one machine, as pytest-benchmark's --benchmark-compare expects."""
    keep_for_summary(config, benchmarks, output_json)
    plain_names(config.rootpath, output_json)  # one name per case, from a checkout or the package
    if configured(config):
        output_json["xferbench_run"] = run_facts(config.stash.get(_LOAD_START, None), config.stash.get(_STARTED, None))


@pytest.hookimpl(optionalhook=True)
def pytest_benchmark_compare_machine_info(config: pytest.Config, benchmarksession: Any, machine_info: dict[str, Any],
                                          compared_benchmark: dict[str, Any]) -> None:
    """Refuse, rather than warn, when the saved run came from another machine."""
    if mismatch := simulation_mismatch(compared_benchmark.get("machine_info", {}), machine_info):
        raise pytest.UsageError(f"--benchmark-compare: {mismatch}")
    differences = machine_differences(compared_benchmark.get("machine_info", {}), machine_info)
    if differences and not config.getoption("xfer_allow_different_machines"):
        raise pytest.UsageError("--benchmark-compare: the saved run comes from a different machine ("
                                + "; ".join(differences) + "); pass --xfer-allow-different-machines to compare anyway")
