"""torchrun on loopback worlds with faults from outside: Ctrl-C and SIGTERM to torchrun, rank 0 killed. Each
ends in bounded time, keeps what finished, and says it in one line; no rank prints a KeyboardInterrupt traceback.
Waits are for conditions (the journal's cases), bounded; no timing asserted."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xferbench.measure.distributed import free_port
from xferbench.measure.distributed.world import NODE_ENV

from processes import descendants, kill_tree

pytestmark = pytest.mark.slow  # worlds of processes: the slow tier

ROOT = Path(__file__).resolve().parents[1]
ENV = os.environ | {"PYTHONPATH": f"{ROOT / 'src'}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
LONG = ["--timeout", "30", "--sizes", "1KiB,2KiB,4KiB,8KiB,16KiB", "--rounds", "200"]


def torchrun(tmp_path: Path, nodes: int, node: int, port: int, entry: list[str]) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", "--nproc-per-node=2",
               f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}", "--rdzv-conf=timeout=60",
               "-m", "xferbench.distributed", *entry]
    return subprocess.Popen(command, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=ENV | {NODE_ENV: f"node{node}"})


def wait_for_cases(proc: subprocess.Popen[str], journal: Path, cases: int) -> None:
    for _ in range(1800):  # up to 180 s for the world to form and finish ``cases`` cases
        if journal.exists() and journal.read_text().count('{"benchmark"') >= cases:
            return
        if proc.poll() is not None:
            pytest.fail(f"the world ended before the fault: {proc.stderr.read() if proc.stderr else ''}")
        time.sleep(0.1)
    pytest.fail("the world did not finish its first cases")


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> tuple[str, str]:
    try:
        return proc.communicate(timeout=timeout)
    finally:
        if proc.poll() is None:
            kill_tree(proc.pid)
            proc.wait()


def rank_pid(torchrun_pid: int, rank: int) -> int:
    for pid in descendants(torchrun_pid):
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if f"RANK={rank}".encode() in environ and any(b"xferbench.distributed" in part for part in
                                                       Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")):
            return pid
    raise AssertionError(f"no rank {rank} below {torchrun_pid}")


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_a_signal_to_torchrun_reaches_every_rank_and_the_json_keeps_what_finished(tmp_path, signum):
    out = tmp_path / "run.json"
    proc = torchrun(tmp_path, 1, 0, free_port(), [*LONG, "--out", str(out)])
    wait_for_cases(proc, tmp_path / "run.journal.jsonl", 2)
    below = descendants(proc.pid)
    proc.send_signal(signum)  # torchrun alone, as a job scheduler or a Ctrl-C at its terminal would
    stdout, stderr = finish(proc)
    assert proc.returncode != 0, stderr[-3000:]
    assert not [pid for pid in below if Path(f"/proc/{pid}").exists() and
                Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"]  # every rank
    assert "KeyboardInterrupt" not in stdout + stderr
    wrote = [line for line in stdout.splitlines() if line.startswith(f"xferbench.distributed: wrote {out}")]
    assert len(wrote) == 1 and "interrupted by SIG" in wrote[0], stdout[-3000:]
    kept = json.loads(out.read_text())["benchmarks"]
    assert len(kept) >= 2 and "cases: the JSON keeps those that finished" in wrote[0]
    end = json.loads((tmp_path / "run.journal.jsonl").read_text().splitlines()[-1])
    assert end["end"]["interrupted"] is True and end["end"]["finished"] == len(kept)


def test_rank_0_killed_is_named_and_its_journal_is_said_to_keep_what_finished(tmp_path):
    """2 "nodes" of 2: rank 0 is killed (kill -9) mid-run. Rank 2 (node1), the lowest rank that answered, names
    rank 0 and only it; rank 0's journal holds the finished cases."""
    out = tmp_path / "run.json"
    port = free_port()
    procs = [torchrun(tmp_path, 2, node, port, [*LONG, "--out", str(out)]) for node in (0, 1)]
    try:
        wait_for_cases(procs[0], tmp_path / "run.journal.jsonl", 2)
        os.kill(rank_pid(procs[0].pid, 0), signal.SIGKILL)
        (out0, err0), (out1, err1) = finish(procs[0]), finish(procs[1])
    finally:
        for proc in procs:
            if proc.poll() is None:
                kill_tree(proc.pid)
    assert not out.exists()
    said = [line for line in (out0 + out1 + err0 + err1).splitlines() if "stopped answering" in line]
    assert len(said) == 1 and said[0].startswith("xferbench.distributed: rank 0 on node0 stopped answering during "), \
        err0[-2000:] + err1[-2000:]
    assert said[0].endswith("rank 0 wrote no JSON: its journal beside --out keeps the cases that finished")
    journal = tmp_path / "run.journal.jsonl"
    assert journal.read_text().count('{"benchmark"') >= 2
    assert "KeyboardInterrupt" not in out0 + out1 + err0 + err1
