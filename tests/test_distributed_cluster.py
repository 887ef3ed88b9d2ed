"""Distributed at cluster scale, on one machine: two torchrun launches on loopback make two "nodes"
(XFERBENCH_NODE tells them apart), a test-only slowed rank, bad launches and bad options."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from xferbench.analyze.load.results import load
from xferbench.analyze.report.distributed import (
    Straggler,
    distributed_findings,
    late_rank,
    links_plot,
    section,
    slowest_rank,
    spread_plot,
)
from xferbench.analyze.view import RunView
from xferbench.measure.distributed import DIST_OPS, free_port
from xferbench.measure.distributed.torchrun import main
from xferbench.measure.distributed.world import NODE_ENV

from fakes import build_html, view_of_rows
from faulty_rank import FAULT_ENV, SLOW_RANK_ENV, TESTS
from processes import kill_tree

pytestmark = pytest.mark.slow  # whole benchmark sessions and worlds: the slow tier (tox -e slow)

ROOT = Path(__file__).resolve().parents[1]
TIMEOUT_S = 30


def launch(tmp_path: Path, nodes: int, per_node: int, args: list[list[str]], env: dict[str, str] | None = None,
           ) -> list[subprocess.CompletedProcess[str]]:
    """``nodes`` torchrun launches on loopback, node i with ``args[i]`` and XFERBENCH_NODE=node<i>; with ``env``, the
    faults it names (tests/faulty_rank.py)."""
    port = free_port()
    procs = []
    faults = {"PYTHONPATH": os.pathsep.join([str(TESTS), os.environ.get("PYTHONPATH", "")]), **env} if env else {}
    for node in range(nodes):
        command = [sys.executable, "-m", "torch.distributed.run", f"--nnodes={nodes}", f"--nproc-per-node={per_node}",
                   f"--node-rank={node}", "--master-addr=127.0.0.1", f"--master-port={port}",
                   "-m", "faulty_rank" if env else "xferbench.distributed", "--timeout", str(TIMEOUT_S), *args[node]]
        procs.append(subprocess.Popen(command, cwd=tmp_path, text=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      env=os.environ | {NODE_ENV: f"node{node}"} | faults))
    results = []
    try:
        for proc in procs:
            out, _ = proc.communicate(timeout=300)
            results.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, ""))
    finally:  # a launch that timed out: its ranks must not run on into the next tests
        for proc in procs:
            if proc.poll() is None:
                kill_tree(proc.pid)
                proc.wait()
    return results


def our_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if line.startswith("xferbench.distributed:")]


@pytest.fixture(scope="module")
def two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """4 ranks on 2 "nodes" of 2; rank 3 (node1) arrives 0.05 s late into every call of every round (256 KiB: 4
    calls a round), inside the timed round, so every rank's round time is the same."""
    tmp = tmp_path_factory.mktemp("cluster")
    out = tmp / "dist.json"
    args = ["--sizes", "256KiB", "--rounds", "4", "--out", str(out)]
    node0, node1 = launch(tmp, 2, 2, [args, args], env={SLOW_RANK_ENV: "3:0.05:call"})
    assert node0.returncode == 0 and node1.returncode == 0, node0.stdout[-3000:] + node1.stdout[-3000:]
    return out


@pytest.mark.slow
class TestTwoNodes:
    def test_point_to_point_within_and_across_nodes(self, two_nodes):
        """rank 0 with its node's next rank (intra) and node1's first rank (inter), each way round."""
        frame = load([two_nodes]).frame
        p2p = frame[(frame["op"] == "send_recv") & (frame["variant"] != "ring")]
        ring = frame[(frame["op"] == "send_recv") & (frame["variant"] == "ring")]
        assert list(zip(ring["src"], ring["dst"], strict=True)) == [("rank0:cpu", "all:cpu")]  # every rank sends
        assert sorted(zip(p2p["src"], p2p["dst"], p2p["crosses"], strict=True)) == [
            ("rank0:cpu", "rank1:cpu", "intra-node"), ("rank0:cpu", "rank2:cpu", "inter-node"),
            ("rank1:cpu", "rank0:cpu", "intra-node"), ("rank2:cpu", "rank0:cpu", "inter-node")]
        assert p2p["path"].nunique() == 4  # four lines in the plots, not one

    def test_every_op_checked_with_every_ranks_rounds(self, two_nodes):
        data = json.loads(two_nodes.read_text())
        assert data["machine_info"]["xferbench"]["nodes"] == ["node0", "node1"]
        ranks = data["machine_info"]["xferbench"]["ranks"]  # the roll call: where each rank ran
        assert [(r["rank"], r["node"], r["local_rank"], r["device"]) for r in ranks] == [
            (0, "node0", 0, "cpu"), (1, "node0", 1, "cpu"), (2, "node1", 0, "cpu"), (3, "node1", 1, "cpu")]
        assert all("cuda_visible_devices" in r and "nccl_env" in r for r in ranks)
        fingerprints = data["machine_info"]["xferbench"]["node_fingerprints"]  # every node, not node 0 alone
        assert sorted(fingerprints) == ["node0", "node1"] and all("xferbench" in f for f in fingerprints.values())
        assert {b["extra_info"]["op"] for b in data["benchmarks"]} == set(DIST_OPS)
        for bench in data["benchmarks"]:
            info = bench["extra_info"]
            assert info["verified"] is True and info["world_size"] == 4
            assert info["rank_hosts"] == ["node0", "node0", "node1", "node1"]
            assert [len(r) for r in info["rank_seconds"]] == [4] * 4 and len(bench["stats"]["data"]) == 4

    def test_the_rank_late_into_every_call_is_named_with_its_host(self, two_nodes):
        """Rank 3 sleeps before each call of a round: every collective lengthens for all alike, and rank 3's
        own calls are the short ones (the others wait for it inside the call). The collectives in which every
        rank needs every other's data name it; a broadcast's receivers need only the root's."""
        frame = load([two_nodes]).frame
        collectives = frame[~frame["op"].isin(("send_recv", "isend_irecv", "broadcast"))]
        assert len(collectives) == 8  # all_gather and reduce_scatter out of place and in place
        assert {late_rank(r).rank for r in collectives["rank_call_seconds"]} == {3}
        lines = [line for line in distributed_findings(frame) if line.startswith("Rank 3 on node1 arrived late")]
        assert lines and (" in 8 of 9 " in lines[0] or " in 9 of 9 " in lines[0]), distributed_findings(frame)

    def test_report_draws_the_new_figures(self, two_nodes):
        results = load([two_nodes])
        plots = section(RunView.of(results))["plots"]
        assert [(p.key, p.missing) for p in plots] == [("distributed", None), ("distributed-links", None),
                                                        ("distributed-ranks", None)]
        assert 'data-plot="distributed-ranks"' in build_html(results)


    def test_rank_0_journals_every_case_beside_the_json(self, two_nodes):
        """The journal (dist.journal.jsonl) holds the same benchmarks as the JSON and says the run ended."""
        journal = two_nodes.with_name("dist.journal.jsonl")
        lines = [json.loads(line) for line in journal.read_text().splitlines()]
        names = [b["name"] for b in json.loads(two_nodes.read_text())["benchmarks"]]
        assert lines[0]["planned"] == len(names) and lines[0]["machine_info"]["xferbench"]["world_size"] == 4
        assert [line["benchmark"]["name"] for line in lines[1:-1]] == names
        assert lines[-1] == {"end": {"exitstatus": 0, "interrupted": False, "finished": len(names)}}
        assert load([journal]).incomplete == []


@pytest.mark.slow
def test_a_rank_killed_mid_run_is_named_and_the_json_keeps_what_finished(tmp_path):
    """4 ranks on 2 nodes: rank 3 dies at the 11th case, rank 2 arrives late at every round. Rank 0
    writes the JSON of the 10 finished cases, names the dead rank in one line, and the report
    names the late one."""
    out = tmp_path / "dist.json"
    args = ["--sizes", "256KiB", "--rounds", "4", "--out", str(out)]
    node0, _ = launch(tmp_path, 2, 2, [args, args], env={SLOW_RANK_ENV: "2:0.1", FAULT_ENV: "3:die-mid-run:10"})
    assert node0.returncode != 0, node0.stdout[-3000:]  # torchrun's own failure code: a child ended with 2
    lines = our_lines(node0.stdout)
    assert [line.split(" (")[0] for line in lines if "stopped answering" in line and "wrote" not in line] == [
        "xferbench.distributed: rank 3 on node1 stopped answering during all_reduce-256KiB-float32-gloo-x4"]
    assert any(line.startswith(f"xferbench.distributed: wrote {out}") for line in lines)
    frame = load([out]).frame
    assert len(frame) == 10 and {"broadcast", "send_recv"} <= set(frame["op"])  # cases 0-9; rank 3 died at 10
    findings = distributed_findings(frame)  # broadcast, the one collective that finished, and rank 2 its receiver
    assert any(finding.startswith("Rank 2 on node1 arrived late at the collective in 1 of 1")
               for finding in findings), findings


@pytest.mark.slow
class TestKilledMidway:
    def test_a_world_killed_midway_keeps_what_rank_0_finished(self, tmp_path):
        """A world killed after its first cases (a lost node, a job's time limit) leaves no JSON, but
        its journal: the report reads it and says how many of the planned cases finished."""
        out = tmp_path / "run.json"
        journal = tmp_path / "run.journal.jsonl"
        port = free_port()
        command = [sys.executable, "-m", "torch.distributed.run", "--nnodes=1", "--nproc-per-node=2",
                   "--master-addr=127.0.0.1", f"--master-port={port}", "-m", "xferbench.distributed",
                   "--timeout", str(TIMEOUT_S), "--sizes", "1KiB,2KiB,4KiB,8KiB,16KiB", "--rounds", "200",
                   "--out", str(out)]
        proc = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            for _ in range(1200):  # up to 120 s for two cases to finish; no timing is asserted
                if journal.exists() and journal.read_text().count('{"benchmark"') >= 2:
                    break
                if proc.poll() is not None:
                    pytest.fail("the world ended before it was killed")
                time.sleep(0.1)
        finally:
            kill_tree(proc.pid)  # torchrun and its ranks: each rank runs in a session of its own
            proc.wait(timeout=60)
        assert not out.exists()
        results = load([journal])
        finished = len(results.frame)
        planned = json.loads(journal.read_text().splitlines()[0])["planned"]
        assert 2 <= finished < planned
        assert results.incomplete == [f"Incomplete run: {finished} of {planned} cases finished before it stopped "
                                      f"(run.journal.jsonl)."]


class TestSlowestRank:
    def test_a_rank_late_every_round_is_named(self):
        ranks = [[1.0, 1.2, 0.9, 1.1], [1.01, 1.19, 0.92, 1.1], [0.99, 1.21, 0.9, 1.12], [1.5, 1.7, 1.4, 1.6]]
        found = slowest_rank(ranks)
        assert isinstance(found, Straggler) and found.rank == 3 and found.share == 1.0
        assert found.lag_s == pytest.approx(0.5, abs=0.02)

    def test_a_rank_that_waits_least_arrived_late(self):
        """The others wait 0.1 s for rank 2 inside every call: rank 2 is late, and no rank is slowest."""
        ranks = [[1.1, 1.12, 1.1, 1.11], [1.11, 1.1, 1.12, 1.1], [1.0, 1.01, 1.0, 1.0], [1.1, 1.11, 1.1, 1.12]]
        found = late_rank(ranks)
        assert isinstance(found, Straggler) and found.rank == 2 and found.lag_s == pytest.approx(0.1, abs=0.02)
        assert slowest_rank(ranks) is None and late_rank([[1.0, 1.02, 1.0], [1.02, 1.0, 1.0]]) is None

    def test_noise_names_nobody(self):
        """Ranks that take turns at being last, by a little, are noise."""
        ranks = [[1.0, 1.02, 1.0], [1.02, 1.0, 1.0], [1.0, 1.0, 1.02]]
        assert slowest_rank(ranks) is None

    def test_one_bad_round_is_not_consistent(self):
        ranks = [[1.0] * 6, [1.0, 1.0, 9.0, 1.0, 1.0, 1.0], [1.0] * 6]
        assert slowest_rank(ranks) is None

    def test_a_lag_within_the_other_ranks_scatter_is_noise(self):
        """Always last by 0.1 s, but the others scatter by as much among themselves."""
        ranks = [[1.0, 1.2, 1.0, 1.2], [1.2, 1.0, 1.2, 1.0], [1.1] * 4, [1.25] * 4]
        assert slowest_rank(ranks) is None

    def test_late_in_half_the_rounds_is_not_consistent(self):
        ranks = [[1.0] * 6, [2.0, 2.0, 2.0, 1.0, 1.0, 1.0], [1.0] * 6]
        assert slowest_rank(ranks) is None

    def test_a_tiny_lag_is_not_beyond_noise(self):
        """Always last, but by 1% of a round: scheduling, not a slow rank."""
        ranks = [[1.0, 1.0, 1.0], [1.0, 1.0, 1.0], [1.01, 1.01, 1.01]]
        assert slowest_rank(ranks) is None

    def test_an_older_run_without_per_rank_times_still_reports(self, tmp_path):
        from xferbench.measure.distributed import DistCase

        stats = {k: 0.1 for k in ("min", "max", "mean", "median", "q1", "q3")} | {
            "iqr": 0.0, "stddev": 0.0, "rounds": 3, "iterations": 1, "data": [0.1] * 3}
        path = tmp_path / "old.json"
        path.write_text(json.dumps({"machine_info": {}, "benchmarks": [
            {"name": "x", "extra_info": DistCase("all_reduce", 1024, "gloo", 2).identity().extra_info()
             | {"bus_factor": 1.0, "round_trip": False}, "stats": stats}]}))
        frame = load([path]).frame
        assert [p.key for p in section(view_of_rows(frame))["plots"]] == ["distributed"]  # nothing shown as missing
        assert spread_plot(frame).startswith("No per-rank times were recorded")
        assert links_plot(frame).startswith("Point-to-point ran within one node only")


@pytest.mark.slow
def test_plan_only_prints_the_cluster_profile_and_measures_nothing(tmp_path):
    """torchrun --profile cluster --plan-only on 2 "nodes" of 2 gloo ranks: rank 0 prints the plan once the world has
    formed, and every rank ends without measuring or writing anything."""
    args = ["--profile", "cluster", "--plan-only", "--out", str(tmp_path / "dist.json")]
    node0, node1 = launch(tmp_path, 2, 2, [args, args])
    assert node0.returncode == 0 and node1.returncode == 0, node0.stdout[-3000:] + node1.stdout[-3000:]
    lines = our_lines(node0.stdout) + our_lines(node1.stdout)
    assert lines == ["xferbench.distributed: 108 cases on 4 ranks (gloo, 4B to 256MiB, 10 rounds each)"], lines
    assert not list(tmp_path.iterdir())


def test_rails_pair_every_local_rank_of_two_nodes(tmp_path):
    """--pairs rails on 2 "nodes" of 2 gloo ranks: local rank 1 of node0 with local rank 1 of node1 too (2 more pairs
    each way, for send_recv and isend_irecv at the cluster profile's 5 sizes up to 16 MiB), in the plan every rank
    agrees on."""
    args = ["--profile", "cluster", "--pairs", "rails", "--plan-only", "--out", str(tmp_path / "dist.json")]
    node0, node1 = launch(tmp_path, 2, 2, [args, args])
    assert node0.returncode == 0 and node1.returncode == 0, node0.stdout[-3000:] + node1.stdout[-3000:]
    lines = our_lines(node0.stdout) + our_lines(node1.stdout)
    assert lines == ["xferbench.distributed: 128 cases on 4 ranks (gloo, 4B to 256MiB, 10 rounds each)"], lines


class TestBadLaunch:
    def test_mismatched_options_end_with_one_line_naming_the_rank_and_host(self, tmp_path):
        began = time.monotonic()
        node0, node1 = launch(tmp_path, 2, 1, [["--sizes", "1KiB", "--out", str(tmp_path / "a.json")],
                                               ["--sizes", "2KiB", "--out", str(tmp_path / "a.json")]])
        assert time.monotonic() - began < TIMEOUT_S + 120  # bounded: no hang
        assert node0.returncode != 0 and node1.returncode != 0
        lines = our_lines(node0.stdout) + our_lines(node1.stdout)
        assert lines and all(line == "xferbench.distributed: rank 1 on node1 was started with --sizes 2KiB, rank 0 on "
                             "node0 with --sizes 1KiB; start every rank with the same options" for line in lines)
        assert not (tmp_path / "a.json").exists()

    @pytest.mark.parametrize("second", [1, 3])
    def test_nodes_of_uneven_ranks_are_refused_in_one_line(self, tmp_path, second):
        """--nproc-per-node 2 on node 0 and 1 (or 3) on node 1: every rank prints the same one line and exits 2
        (torchrun then fails); no JSON is written."""
        port = free_port()
        procs = [subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--nnodes=2",
                                   f"--nproc-per-node={per_node}", f"--node-rank={node}", "--master-addr=127.0.0.1",
                                   f"--master-port={port}", "--rdzv-conf=timeout=60", "-m", "xferbench.distributed",
                                   "--timeout", str(TIMEOUT_S), "--sizes", "4B", "--out", str(tmp_path / f"d{node}.json")],
                                  cwd=tmp_path, env=os.environ | {NODE_ENV: f"node{node}"}, text=True,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE)
                 for node, per_node in ((0, 2), (1, second))]
        try:
            ended = [proc.communicate(timeout=300) for proc in procs]
        finally:
            for proc in procs:
                if proc.poll() is None:
                    kill_tree(proc.pid)
                    proc.wait()
        said = (f"xferbench.distributed: the nodes run different numbers of ranks (node0 2, node1 {second}: a world of "
                f"{2 + second}); start every node with the same --nproc-per-node (srun: --ntasks-per-node)")
        for proc, (_, err) in zip(procs, ended, strict=True):
            lines = our_lines(err)
            assert proc.returncode != 0 and lines and set(lines) == {said}, err[-3000:]
        assert not list(tmp_path.glob("d*.json"))

    def test_a_rank_that_never_joins_ends_within_the_timeout(self, tmp_path):
        """Rank 0 of a world of 2 whose rank 1 never comes: one line naming rank and host, exit 2."""
        env = os.environ | {"RANK": "0", "WORLD_SIZE": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                            "MASTER_PORT": str(free_port()), NODE_ENV: "lonely"}
        began = time.monotonic()
        proc = subprocess.run([sys.executable, "-m", "xferbench.distributed", "--timeout", "3", "--out",
                               str(tmp_path / "x.json")], env=env, capture_output=True, text=True, timeout=120)
        assert time.monotonic() - began < 3 + 60
        assert proc.returncode == 2
        assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(
            "xferbench.distributed: rank 0 on lonely: the world of 2 did not form at 127.0.0.1:")
        assert "launched for different world sizes: this one for 2, by its WORLD_SIZE" in proc.stderr


class TestOptionsUpFront:
    """Usage errors before any rendezvous: exit 2 and one line (no rank waits for the timeout)."""

    @pytest.fixture
    def as_rank(self, monkeypatch, tmp_path):
        monkeypatch.setenv("RANK", "0")
        monkeypatch.setenv("WORLD_SIZE", "2")
        monkeypatch.setenv("MASTER_PORT", "1")  # nothing listens: reaching the rendezvous would fail differently
        monkeypatch.chdir(tmp_path)
        return tmp_path

    @pytest.mark.parametrize(("argv", "message"), [
        (["--timeout", "nan"], "argument --timeout: 'nan': must be a finite number of seconds above 0"),
        (["--timeout", "-1"], "argument --timeout: '-1': must be a finite number of seconds above 0"),
        (["--timeout", "inf"], "argument --timeout: 'inf': must be a finite number of seconds above 0"),
        (["--rounds", "0"], "argument --rounds: '0': must be between 1 and 10000"),
        (["--rounds", "many"], "argument --rounds: 'many' is not a whole number"),
        (["--mem-fraction", "1.5"], "argument --mem-fraction: '1.5': must be a fraction between 0 and 1, e.g. 0.5"),
    ])
    def test_bad_values(self, as_rank, capsys, argv, message):
        with pytest.raises(SystemExit) as exit_:
            main(argv)
        assert exit_.value.code == 2 and capsys.readouterr().err == f"xferbench.distributed: {message}\n"

    @pytest.mark.parametrize(("argv", "env", "start"), [
        ([], {"WORLD_SIZE": "1"}, "rank 0 on "),
        (["--sizes", "1TiB"], {}, "rank 0 on "),
        (["--sizes", "2B"], {}, "--sizes: 2B is smaller than one float32 element"),
        (["--sizes", "2x3"], {}, "--sizes: give byte sizes"),
        (["--sizes", "1KiB..1B"], {}, "--sizes: '1KiB..1B': the range must go from small to large"),
        (["--out", "missing/x.json"], {}, "--out missing/x.json: the folder missing does not exist"),
        (["--out", "exists.json"], {}, "--out exists.json: it exists already"),
    ])
    def test_bad_launch_or_sizes(self, as_rank, capsys, monkeypatch, argv, env, start):
        (as_rank / "exists.json").write_text("{}")
        for key, value in env.items():
            monkeypatch.setenv(key, value)
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"xferbench.distributed: {start}") and err.count("\n") == 1
        assert (as_rank / "exists.json").read_text() == "{}"  # never overwritten

    def test_a_world_of_one_says_how_to_start_two(self, as_rank, capsys, monkeypatch):
        monkeypatch.setenv("WORLD_SIZE", "1")
        assert main([]) == 2
        assert "start at least 2 (torchrun --nproc-per-node=2, or --nnodes=2)" in capsys.readouterr().err

    def test_nccl_with_fewer_gpus_than_ranks_per_node(self, as_rank, capsys, monkeypatch):
        """Two ranks on one GPU make NCCL refuse the communicator: say so before the rendezvous."""
        monkeypatch.setenv("LOCAL_WORLD_SIZE", "2")
        assert main(["--backend", "nccl"]) == 2
        assert "nccl needs one GPU per rank, and this node runs 2 ranks on 0 GPU(s)" in capsys.readouterr().err

    def test_a_size_no_rank_can_hold(self, as_rank, capsys):
        assert main(["--sizes", "1TiB"]) == 2
        assert "free here" in capsys.readouterr().err

    def test_unwritable_folder(self, as_rank, capsys):
        locked = as_rank / "locked"
        locked.mkdir(mode=0o500)
        if os.access(locked, os.W_OK):
            pytest.skip("running as a user who can write anywhere (root)")
        assert main(["--out", str(locked / "x.json")]) == 2
        assert "is not writable" in capsys.readouterr().err

    def test_not_under_torchrun_is_one_line(self, tmp_path):
        proc = subprocess.run([sys.executable, "-m", "xferbench.distributed", "--out", str(tmp_path / "x.json")],
                              capture_output=True, text=True,
                              env={"PATH": "/usr/bin:/bin"} | {"PYTHONPATH": str(ROOT / "src")})
        assert proc.returncode == 2
        assert proc.stderr.startswith("xferbench.distributed: not started by torchrun (RANK is unset)")


def test_pytest_rejects_a_nan_timeout(pytester):
    """The pytest front-end shares the option table: --xfer-dist-timeout=nan is a usage error too."""
    pytester.makeconftest("pytest_plugins = ['xferbench.measure.session.plugin']")
    result = pytester.runpytest_subprocess("--xfer-dist-timeout=nan")
    assert result.ret == 4
    result.stderr.fnmatch_lines(["*--xfer-dist-timeout: 'nan': must be a finite number of seconds above 0*"])


def test_one_option_table_two_front_ends(pytester):
    """Every shared option is --NAME for torchrun and --xfer-dist-NAME in pytest, with the same default."""
    from xferbench.measure.distributed.options import OPTIONS
    from xferbench.measure.distributed.torchrun import parser

    defaults = vars(parser().parse_args([]))
    assert all(defaults[option.dest] == option.default for option in OPTIONS)
    pytester.makeconftest("pytest_plugins = ['xferbench.measure.session.plugin']")
    help_text = pytester.runpytest_subprocess("--help").stdout.str()
    assert all(f"--xfer-dist-{option.name}" in help_text for option in OPTIONS)
