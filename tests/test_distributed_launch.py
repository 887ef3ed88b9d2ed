"""``xferbench torchrun``: torchrun's rendezvous bounded by default, and a node that never joins named in one line."""

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from xferbench.cli import main
from xferbench.measure.distributed import launch as launch_module
from xferbench.measure.distributed.launch import (
    JOIN_TIMEOUT_S,
    Launch,
    LaunchError,
    command,
    missing_line,
    parse,
    ranks_said,
)

NODE0 = ["--nnodes=2", "--nproc-per-node=8", "--node-rank=0", "--master-addr=head", "--master-port=29500"]
#: The static rendezvous's last line when a node never came (torch.distributed.run, --master-addr/--master-port).
STATIC = "torch.distributed.DistStoreError: Timed out after 121 seconds waiting for clients. 1/2 clients joined.\n"


class TestCommand:
    def test_the_rendezvous_is_bounded_unless_the_user_bounds_it(self):
        launch = parse([*NODE0, "--", "--profile", "cluster"])
        assert launch == Launch(JOIN_TIMEOUT_S, tuple(NODE0), ("--profile", "cluster"))
        assert command(launch) == [sys.executable, "-m", "torch.distributed.run", *NODE0,
                                   "--rdzv-conf=timeout=120,join_timeout=120", "-m", "xferbench.distributed",
                                   "--profile", "cluster"]
        own = parse(["--join-timeout", "30", *NODE0, "--rdzv-conf", "timeout=600", "--"])
        assert own.join_timeout == 30 and "--join-timeout" not in own.torchrun
        assert not any(arg.startswith("--rdzv-conf=") for arg in command(own))  # the user's own, as given

    @pytest.mark.parametrize(("argv", "message"), [
        (NODE0, "give torchrun's options, then --, then xferbench.distributed's"),
        (["--join-timeout", "0", "--"], "--join-timeout '0': give whole seconds from 1 to 999999"),
        (["--join-timeout=nan", "--"], "--join-timeout 'nan': give whole seconds from 1 to 999999"),
        (["--join-timeout=0.5", "--"], "--join-timeout '0.5': give whole seconds from 1 to 999999"),
        (["--join-timeout=2.5", "--"], "--join-timeout '2.5': give whole seconds from 1 to 999999"),
        (["--join-timeout=1e6", "--"], "--join-timeout '1e6': give whole seconds from 1 to 999999"),
        (["--join-timeout=1e300", "--"], "--join-timeout '1e300': give whole seconds from 1 to 999999")])
    def test_bad_launches(self, argv, message):
        with pytest.raises(LaunchError, match="^" + message.replace("(", r"\(")):
            parse(argv)

    @given(value=st.text(max_size=12) | st.floats().map(repr) | st.integers(-10, 10**7).map(str))
    def test_any_join_timeout_is_whole_seconds_torchrun_reads_or_refused(self, value):
        try:
            launch = parse([f"--join-timeout={value}", "--"])
        except LaunchError as error:
            assert str(error).startswith("--join-timeout") and "\n" not in str(error)
            return
        bound = command(launch)[3].removeprefix("--rdzv-conf=timeout=").split(",")[0]
        assert bound.isdigit() and 1 <= int(bound) < 10**6

    @pytest.mark.parametrize(("option", "message"), [
        ("--nnodes=0", "--nnodes '0': give a whole number of nodes from 1, or MIN:MAX (1 <= MIN <= MAX)"),
        ("--nnodes=-1", "--nnodes '-1': give a whole number of nodes from 1, or MIN:MAX (1 <= MIN <= MAX)"),
        ("--nnodes=abc", "--nnodes 'abc': give a whole number of nodes from 1, or MIN:MAX (1 <= MIN <= MAX)"),
        ("--nnodes=4:2", "--nnodes '4:2': give a whole number of nodes from 1, or MIN:MAX (1 <= MIN <= MAX)"),
        ("--nproc-per-node=0", "--nproc-per-node '0': give a whole number of ranks from 1, or auto, cpu, gpu or xpu"),
        ("--nproc-per-node=-1", "--nproc-per-node '-1': give a whole number of ranks from 1, or auto, cpu, gpu or xpu"),
        ("--nproc_per_node=abc", "--nproc-per-node 'abc': give a whole number of ranks from 1, or auto, cpu, gpu or "
                                 "xpu")])
    def test_bad_counts_are_one_line_before_torchrun_runs(self, monkeypatch, capsys, option, message):
        """torchrun ends on these with its AssertionError or ValueError traceback and exit 1 ("regression")."""
        monkeypatch.setattr(launch_module.subprocess, "Popen", None)  # torchrun is never started
        assert main(["torchrun", option, "--"]) == 2
        assert capsys.readouterr().err == f"xferbench torchrun: {message}\n"

    @pytest.mark.parametrize("option", ["--nnodes=1", "--nnodes=1:4", "--nnodes=2:2", "--nproc-per-node=8",
                                        "--nproc-per-node=auto", "--nproc-per-node=gpu"])
    def test_counts_torchrun_reads_pass(self, option):
        assert parse([option, "--"]).torchrun == (option,)

    @given(nnodes=st.text(max_size=8) | st.integers(-3, 5).map(str), per_node=st.text(max_size=8) | st.integers(-3, 5).map(str))
    def test_any_count_is_one_torchrun_reads_or_refused(self, nnodes, per_node):
        try:
            parse([f"--nnodes={nnodes}", f"--nproc-per-node={per_node}", "--"])
        except LaunchError as error:
            assert str(error).startswith(("--nnodes", "--nproc-per-node")) and "\n" not in str(error)
            return
        bounds = [int(part) for part in nnodes.split(":")]
        assert 1 <= bounds[0] <= bounds[-1] and len(bounds) <= 2
        assert per_node in ("auto", "cpu", "gpu", "xpu") or int(per_node) >= 1

    def test_the_cli_says_it_in_one_line(self, capsys):
        assert main(["torchrun", *NODE0]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and err.startswith("xferbench torchrun: give torchrun's options, then --")


class TestMissingNodes:
    def test_the_static_rendezvous_names_the_nodes_and_ranks_that_never_joined(self):
        line = missing_line("Traceback (most recent call last):\n ...\n" + STATIC, parse([*NODE0, "--"]))
        assert line == ("xferbench torchrun: 1 of 2 nodes joined the rendezvous at head:29500 within --join-timeout "
                        "120 s: node rank(s) 1 (ranks 8-15) never joined; start every node with the same --nnodes, "
                        "--master-addr and --master-port, or raise --join-timeout")

    def test_more_nodes_some_joined(self):
        launch = parse(["--nnodes=4", "--node-rank=2", "--master-addr=head", "--master-port=1", "--"])
        line = missing_line(STATIC.replace("1/2", "3/4"), launch)
        assert line is not None and ": 3 of 4 nodes joined" in line and "1 of node ranks 0, 1, 3 never joined" in line

    def test_c10d_says_which_it_cannot(self):
        launch = parse(["--nnodes=2", "--rdzv-backend=c10d", "--rdzv-endpoint=head:29400", "--"])
        line = missing_line("torch.distributed.elastic.rendezvous.api.RendezvousTimeoutError\n", launch)
        assert line is not None and line.startswith("xferbench torchrun: the rendezvous at head:29400 did not gather")

    def test_any_other_failure_is_torchruns_own(self):
        assert missing_line("ChildFailedError: xferbench.distributed FAILED\n", parse([*NODE0, "--"])) is None


class TestRanksSaid:
    """A rank that stops with its own one line (exit 2) is said once, without torchrun's traceback of its exit."""

    FAILED = ("xferbench.distributed: the nodes run different numbers of ranks (node0 2, node1 1: a world of 3); "
              "start every node with the same --nproc-per-node (srun: --ntasks-per-node)\n")
    REPORT = ("E1203 12:11:38 api.py:1002] failed (exitcode: 2) local_rank: 1\nTraceback (most recent call last):\n"
              "  File \"run.py\", line 1032, in <module>\ntorch.distributed.elastic.multiprocessing.errors."
              "ChildFailedError: \n====\nFailures:\n[1]:\n  rank      : 0 (local_rank: 0)\n  exitcode  : -15\n"
              "Root Cause (first observed failure):\n[0]:\n  rank      : 1 (local_rank: 1)\n  exitcode  : {code} (pid: 5)\n"
              "====\n")

    def test_the_ranks_line_once_and_their_exit_status(self):
        assert ranks_said(self.FAILED * 2 + self.REPORT.format(code=2)) == ([self.FAILED.strip()], 2)

    def test_a_rank_that_failed_otherwise_keeps_torchruns_report(self):
        assert ranks_said(self.FAILED + self.REPORT.format(code=1)) is None
        assert ranks_said(self.REPORT.format(code=2)) is None  # no line of a rank: nothing to stand for the report
        assert ranks_said(self.FAILED) is None

    def test_the_wrapper_prints_only_the_ranks_line(self, monkeypatch, capsys):
        class Done:
            pid, returncode = 0, 1
            stderr = iter([self.FAILED, self.FAILED, self.REPORT.format(code=2)])

            def poll(self) -> int:
                return 1

            def wait(self, timeout: float | None = None) -> int:
                return 1

        monkeypatch.setattr(launch_module, "_port_taken", lambda launch: None)
        monkeypatch.setattr(launch_module.subprocess, "Popen", lambda *args, **kwargs: Done())
        monkeypatch.setattr(launch_module, "_wait", lambda proc, started, deadline: (1, False))
        assert launch_module.run(parse([*NODE0, "--"])) == 2
        assert capsys.readouterr().err == self.FAILED
