"""NCCL's choices read from its own INFO log (captured text: no GPU here), and the settings recorded beside them."""

from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from xferbench.measure.distributed.nccl_log import CONF_LIMIT, configured, log_env, summary

#: Rank 0 of a 2x2 world, NCCL 2.21.5, as NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET,GRAPH writes it (trimmed).
IB = """\
gpu-a:41233:41233 [0] NCCL INFO Bootstrap : Using eth0:10.0.0.11<0>
gpu-a:41233:41233 [0] NCCL INFO NCCL version 2.21.5+cuda12.4
gpu-a:41233:41290 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/IB ; OOB eth0:10.0.0.11<0>
gpu-a:41233:41290 [0] NCCL INFO Using network IB
gpu-a:41233:41290 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9e - Init START
gpu-a:41233:41290 [0] NCCL INFO Channel 00/02 :    0   1   2   3
gpu-a:41233:41290 [0] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [receive] via NET/IB/0/GDRDMA
gpu-a:41233:41290 [0] NCCL INFO Channel 01/0 : 3[1] -> 0[0] [receive] via NET/IB/1/GDRDMA
gpu-a:41233:41290 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/IPC/read
gpu-a:41233:41290 [0] NCCL INFO Channel 01/0 : 0[0] -> 1[1] via P2P/IPC/read
gpu-a:41233:41290 [0] NCCL INFO Connected all rings
gpu-a:41233:41290 [0] NCCL INFO comm 0x55d0 rank 0 nranks 4 cudaDev 0 nvmlDev 0 busId 1b000 commId 0x9e - Init COMPLETE
"""
#: The same world fallen back to TCP, its two local GPUs through host memory.
SOCKET = """\
gpu-b:5120:5120 [1] NCCL INFO NCCL version 2.18.3+cuda12.1
gpu-b:5120:5170 [1] NCCL INFO NET/Socket : Using [0]eth0:10.0.0.12<0>
gpu-b:5120:5170 [1] NCCL INFO Using network Socket
gpu-b:5120:5170 [1] NCCL INFO Channel 00 : 2[0] -> 3[1] via SHM/direct/direct
gpu-b:5120:5170 [1] NCCL INFO Channel 00/0 : 3[1] -> 0[0] [send] via NET/Socket/0
"""


def test_infiniband_and_nvlink_peers():
    assert summary(IB) == {"version": "2.21.5", "network": "IB", "transports": {"NET/IB": 2, "P2P/IPC": 2}}


def test_a_fall_back_to_tcp_is_seen():
    assert summary(SOCKET) == {"version": "2.18.3", "network": "Socket", "transports": {"NET/Socket": 1, "SHM": 1}}


def test_a_log_without_nccl_lines_says_nothing():
    assert summary("") == {} and summary("Traceback (most recent call last):\n  NCCL WARN oops\n") == {}


TRANSPORTS = st.sampled_from(["P2P/IPC/read", "P2P/CUMEM", "SHM/direct/direct", "NET/IB/0/GDRDMA", "NET/Socket/1",
                              "P2P/direct pointer"])


@given(st.lists(st.tuples(st.integers(0, 63), st.integers(0, 7), st.integers(0, 7), TRANSPORTS), max_size=20))
def test_every_channel_line_is_counted_under_its_transport(channels):
    text = "".join(f"h:1:2 [0] NCCL INFO Channel {c:02d}/0 : {a}[{a}] -> {b}[{b}] via {via}\n" for c, a, b, via in channels)
    expected: dict[str, int] = {}
    for *_, via in channels:
        key = via.split()[0].split("/")
        name = "/".join(key[:2]) if key[0] in ("NET", "P2P") else key[0]
        expected[name] = expected.get(name, 0) + 1
    assert summary(text).get("transports", {}) == expected


@given(st.text())
def test_any_text_is_read_without_raising(text):
    found = summary(text)
    assert set(found) <= {"version", "network", "transports"}


def test_the_users_own_nccl_debug_wins(tmp_path):
    assert log_env({}, tmp_path, 3) == {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "INIT,NET,GRAPH",
                                        "NCCL_DEBUG_FILE": str(tmp_path / "nccl.3.log")}
    assert log_env({"NCCL_DEBUG": "WARN"}, tmp_path, 3) == {}


def test_settings_and_conf_files_are_recorded_and_bounded(tmp_path):
    etc = tmp_path / "nccl.conf"
    etc.write_text("NCCL_IB_HCA=mlx5_0\n")
    own = tmp_path / "own.conf"
    own.write_text("x" * (CONF_LIMIT + 100))
    env = {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1", "NCCL_CONF_FILE": str(own),
           "PATH": "/bin"}
    found = configured(env, etc)
    assert found["torch_env"] == {"TORCH_DISTRIBUTED_DEBUG": "DETAIL", "TORCH_NCCL_DUMP_ON_TIMEOUT": "1"}
    assert found["nccl_conf"] == {str(etc): "NCCL_IB_HCA=mlx5_0\n", str(own): "x" * CONF_LIMIT}
    assert configured({}, Path("/nonexistent/nccl.conf")) == {"torch_env": {}, "nccl_conf": {}}


def test_each_ranks_choices_join_the_roll_call(tmp_path, monkeypatch):
    """Rank 0 of an nccl world of 2 (a fake process group: rank 1's log is SOCKET): each rank's choices beside its
    place in the JSON; a gloo world gathers nothing."""
    import torch.distributed as dist

    from xferbench.measure.distributed import torchrun

    log = tmp_path / "nccl.0.log"
    log.write_text(IB)

    def all_gather_object(out, mine):
        out[:] = [mine, summary(SOCKET)]

    monkeypatch.setattr(dist, "all_gather_object", all_gather_object)
    places = [{"rank": 0}, {"rank": 1}]
    torchrun._nccl_choices("nccl", log, places)
    assert [p["nccl"]["network"] for p in places] == ["IB", "Socket"]
    monkeypatch.setattr(dist, "all_gather_object", None)
    torchrun._nccl_choices("gloo", None, places)  # no collective called on gloo


def test_the_report_says_what_nccl_chose_and_how_it_was_set():
    from xferbench.analyze.report.distributed import setup_sentence

    ranks = [{"rank": 0, "nccl": summary(IB), "torch_env": {"TORCH_DISTRIBUTED_DEBUG": "DETAIL"},
              "nccl_conf": {"/etc/nccl.conf": "NCCL_IB_HCA=mlx5_0\n"}},
             {"rank": 1, "nccl": summary(IB), "torch_env": {}, "nccl_conf": {}},
             {"rank": 2, "nccl": summary(SOCKET), "torch_env": {}, "nccl_conf": {}}]
    assert setup_sentence({"xferbench": {"ranks": ranks}}) == (
        "Setup: NCCL 2.21.5 over network IB via NET/IB (2 channels), P2P/IPC (2 channels) on ranks 0, 1; "
        "NCCL 2.18.3 over network Socket via NET/Socket (1 channel), SHM (1 channel) on rank 2; "
        "set: TORCH_DISTRIBUTED_DEBUG=DETAIL (DETAIL checks every call: slower); NCCL configuration read from "
        "/etc/nccl.conf (recorded in the JSON).")
    assert setup_sentence({"xferbench": {"ranks": [{"rank": 0, "torch_env": {}, "nccl_conf": {}}]}}) is None
    assert setup_sentence({}) is None


def test_giving_up_exits_2(monkeypatch, tmp_path):
    """The watch's give-up (a fake hang: the deadline passed) says why and exits 2."""
    from xferbench.measure.distributed import torchrun

    events = []
    monkeypatch.setattr(torchrun.os, "_exit", lambda status: events.append(("exit", status)))
    store = type("Store", (), {"set": lambda self, key, value: None})()
    monkeypatch.setattr("torch.distributed.distributed_c10d._get_default_store", lambda: store)
    watch = type("Watch", (), {"rank": 1, "limit_s": 0.0, "wait_written": lambda self, seconds: True})()
    finish = torchrun._Finish(tmp_path / "out.json", [], None, None, [], "2 ranks on 1 node(s), nccl")
    finish.give_up(watch, "rank 1 made no progress")
    assert events == [("exit", 2)]
