"""The facts of the machine a run measured on, as one table: each one's name, where ``machine_info`` holds it, its
type, unit and how it is written (pyperf's ``_metadata.py`` is the model). The page's machine table, the report's
machine line and compare's list of what differs between two machines read ``FACTS``: a new fact is its ``Fact`` here
and the line of measure/hardware/machine.py that records it. No torch here, and nothing from either side."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import reduce
from typing import Any

__all__ = ["FACT", "FACTS", "Fact", "at", "gpu_records", "identity", "machine_line", "machine_table", "shown"]


def at(*path: str) -> Callable[[Any], Any]:
    """A reader of the value at ``path`` in a record (machine_info, or one GPU's); None where a step is missing."""
    return lambda record: reduce(lambda found, key: found.get(key) if isinstance(found, dict) else None, path, record)


def gpu_records(section: Any) -> list[dict[str, Any]]:
    """The GPU records of the run's xferbench section (``machine_info.xferbench``), malformed entries left out."""
    listed = at("devices")(section)
    return [d for d in listed if isinstance(d, dict)] if isinstance(listed, list) else []


def _section(machine_info: dict[str, Any]) -> dict[str, Any]:
    block = machine_info.get("xferbench")
    return block if isinstance(block, dict) else {}


def _gpu_names(machine_info: dict[str, Any]) -> list[Any] | None:
    """One name per listed GPU (None for a malformed entry); None when the run has no section at all."""
    listed = _section(machine_info).get("devices")
    names = [d.get("name") if isinstance(d, dict) else None for d in listed] if isinstance(listed, list) else []
    return names if _section(machine_info) else None


def _link(generation: str, width: str) -> Callable[[Any], str | None]:
    """A reader of a PCIe link, written the one way it is (``Gen5 x16``; no width where not recorded): None where the
    generation is not recorded."""
    return lambda gpu: None if not isinstance(gpu.get(generation), int) else f"Gen{gpu[generation]}" + (
        f" x{gpu[width]}" if gpu.get(width) is not None else "")


@dataclass(frozen=True)
class Fact:
    """One fact of a machine, as pyperf's registry holds one metadata key."""

    name: str  # what the page and compare call it
    read: Callable[[Any], Any]  # its value from machine_info (a GPU's fact: from that GPU's record)
    kind: type = str  # the JSON type of a recorded value: any other reads as not recorded
    unit: str = ""  # written after a number ("16 logical CPUs")
    show: Callable[[Any], str] | None = None  # how a value is written, where the unit does not say
    #: What two runs that differ in it are: "hardware" (two machines: compare refuses them unless allowed),
    #: "software" (one machine upgraded: compare says so; one report holds one), "tooling" (said); "" not compared.
    change: str = ""
    #: The page's machine table: "" a row of its own, None no row, else the row it shares, after ``sep``.
    row: str | None = ""
    sep: str = ", "
    #: What the page and the machine line write where the run did not record it; None: nothing.
    unknown: str | None = "not recorded"
    gpu: bool = False  # one value per GPU, read from each GPU's record; its page row is the GPU's

    def value(self, record: Any) -> Any:
        """The recorded value, None where it is not recorded (or not of its kind)."""
        return value if type(value := self.read(record)) is self.kind else None

    def text(self, value: Any) -> str:
        """A recorded value as every output writes it."""
        return self.show(value) if self.show is not None else f"{value} {self.unit}".rstrip()

    def written(self, record: Any) -> str | None:
        """Its text for ``record``, else its unknown word (None: nothing is written)."""
        return self.unknown if (value := self.value(record)) is None else self.text(value)

    def compared(self, machine_info: dict[str, Any]) -> Any:
        """Its value for compare: a GPU's fact as one value per GPU, None where no GPU records it."""
        if not self.gpu:
            return self.value(machine_info)
        values = [self.value(gpu) for gpu in gpu_records(_section(machine_info))]
        return values if any(v is not None for v in values) else None


#: Every machine fact, in the page's order (a GPU's facts make one row per GPU, where the first of them stands).
FACTS: tuple[Fact, ...] = (
    Fact("GPUs", _gpu_names, list, show=lambda names: f"[{', '.join(map(str, names))}]" if names else "no GPU",
         change="hardware", row=None),
    Fact("torch", at("xferbench", "torch"), change="software"),
    Fact("CUDA", at("xferbench", "cuda"), change="software", row="CUDA / HIP", unknown="–"),
    Fact("HIP", at("xferbench", "hip"), change="software", row="CUDA / HIP", sep=" / ", unknown="–"),
    Fact("driver", at("xferbench", "driver"), change="software"),
    Fact("CPU", at("cpu", "brand_raw"), change="hardware"),
    # os.cpu_count (py-cpuinfo): logical CPUs, two a core where the cores run two threads each
    Fact("cores", at("cpu", "count"), int, "logical CPUs", row="CPU", unknown="CPU count not recorded"),
    Fact("Python", at("python_version"), change="tooling"),
    Fact("pytest-benchmark", at("xferbench", "pytest_benchmark"), change="tooling", row=None),
    Fact("transparent huge pages", at("xferbench", "host", "transparent_hugepage"), unknown=None),
    # A simulated run is never the same machine as a real one (and compare refuses the pair).
    Fact("simulated", lambda info: bool(_section(info).get("simulated")) if _section(info) else None, bool,
         change="hardware", row=None),
    Fact("GPU", at("name"), gpu=True, unknown="GPU not recorded"),
    # In GiB as the page writes sizes, without units.py: the report path enters it from one layer only.
    Fact("GPU memory", at("memory_bytes"), int, show=lambda n: f"{n / 2**30:.3g} GiB", change="hardware", gpu=True,
         unknown="memory not recorded"),
    Fact("PCIe link", _link("pcie_max_generation", "pcie_max_width"), show="PCIe {}".format, change="hardware",
         gpu=True, unknown="PCIe link not recorded"),
    # GPUs drop to a lower generation when idle: the link at run time is shown, never compared.
    Fact("PCIe link now", _link("pcie_generation", "pcie_width"), show="(now {})".format, sep=" ", gpu=True,
         unknown=None),
    Fact("NVLink", lambda gpu: [gpu.get("nvlink_version"), gpu["nvlink_links"]] if gpu.get("nvlink_links") else None,
         list, show=lambda link: "NVLink" + (f" {link[0]}" if link[0] else "") + f" x{link[1]}",
         change="hardware", gpu=True, unknown=None),
    Fact("peer access possible (capability, not whether enabled)", lambda info: at("xferbench", "peer_access")(info)
         or None, list, show=lambda matrix: "; ".join(f"{i}->{j}: {'yes' if ok else 'no'}" for i, row in enumerate(matrix)
         for j, ok in enumerate(row if isinstance(row, list) else []) if i != j) or "one device", unknown=None),
)
FACT = {fact.name: fact for fact in FACTS}


def identity(machine_info: dict[str, Any], *changes: str, gpus: bool = True) -> dict[str, Any]:
    """The facts compared as ``changes`` ("hardware", "software", "tooling"), by name, None where not recorded;
    ``gpus`` False leaves out a GPU's facts (the GPUs' names stay)."""
    return {fact.name: fact.compared(machine_info) for fact in FACTS if fact.change in changes and (gpus or not fact.gpu)}


def shown(name: str, value: Any) -> str:
    """A compared value as compare writes it: through its fact (a GPU's, one per GPU in brackets); as is otherwise."""
    fact = FACT.get(name)
    if fact is not None and fact.gpu:
        return "[" + ", ".join("not recorded" if v is None else fact.text(v) for v in value) + "]"
    return str(value) if fact is None else fact.text(value)


def machine_table(machine_info: dict[str, Any]) -> list[tuple[str, str]]:
    """The page's machine table: (label, text) per row, a GPU's facts in one row per GPU, named by its device."""
    rows: dict[str, str] = {}
    gpus = [(str(gpu.get("device")), gpu) for gpu in gpu_records(_section(machine_info))]
    for fact in (fact for fact in FACTS if fact.row is not None):
        for label, record in gpus if fact.gpu else [(fact.row or fact.name, machine_info)]:
            if (text := fact.written(record)) is not None:
                rows[label] = rows[label] + fact.sep + text if label in rows else text
    return list(rows.items())


def machine_line(machine_info: dict[str, Any]) -> str:
    """The machine in one line: its GPUs (alike ones counted) with their links, the driver and CUDA/HIP, torch, the
    CPU and its logical CPUs, each written as the page's table writes it."""
    kinds: dict[str, list[str]] = {}
    for gpu in gpu_records(_section(machine_info)):
        kind = ", ".join(text for name in ("GPU", "PCIe link", "NVLink") if (text := FACT[name].written(gpu)) is not None)
        kinds.setdefault(kind, []).append(str(gpu.get("device")))
    gpus = "; ".join(f"{len(names)} × {kind} ({', '.join(names)})" if len(names) > 1 else f"{kind} ({names[0]})"
                     for kind, names in kinds.items())

    def said(name: str) -> str:
        return str(FACT[name].written(machine_info))

    runtime = "HIP " + said("HIP") if FACT["HIP"].value(machine_info) else "CUDA " + said("CUDA")
    # The driver and toolkit where there is a GPU or the run recorded either (a CPU-only run has neither).
    stack = kinds or any(FACT[name].value(machine_info) for name in ("driver", "CUDA", "HIP"))
    software = f" · driver {said('driver')}, {runtime}" if stack else ""
    cores = ", " + said("cores") if FACT["cores"].value(machine_info) else ""
    return f"Machine: {gpus or 'no GPU'}{software} · torch {said('torch')} · CPU {said('CPU')}{cores}."
