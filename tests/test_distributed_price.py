"""A distributed world's price: each call as its op's algorithm costs at the world's size, on the links the nodes'
fingerprints name, gloo's calls and every start-up slowed where ranks outnumber a host's CPUs, the start-up once."""

import pytest

from xferbench.measure.distributed.operations import DistCase
from xferbench.measure.distributed.price import (
    ETHERNET,
    GLOO_BETWEEN_HOSTS,
    GLOO_LOOPBACK,
    INFINIBAND,
    NCCL_STARTUP_S,
    NVLINK,
    PCIE,
    STARTUP_PROCESS_S,
    STARTUP_S,
    Link,
    Price,
    call_seconds,
    case_seconds,
    price_of,
    world_seconds,
)

STEP, BYTE = Link("step", 0.0, 1.0, float("inf"), measured=False), Link("byte", 0.0, 0.0, 1e-9, measured=False)
MIB = 2**20


def steps_and_bytes(op, n, variant=None, crosses=None):
    """A call's steps (latency alone priced, 1 s a step) and bytes (1 s a byte) at ``n`` ranks."""
    def cost(link):
        return call_seconds(DistCase(op, MIB, "gloo", n, variant=variant, crosses=crosses), Price("gloo", link, link, link))
    return cost(STEP), cost(BYTE) / MIB


class TestByWorldSize:
    @pytest.mark.parametrize("n", [2, 4, 16])
    def test_ring_all_reduce_takes_2_n_minus_1_steps_and_moves_2_n_minus_1_over_n(self, n):
        assert steps_and_bytes("all_reduce", n) == (2 * (n - 1), pytest.approx(2 * (n - 1) / n))

    @pytest.mark.parametrize("op", ["all_gather", "reduce_scatter", "all_to_all"])
    def test_the_split_ops_take_n_minus_1_steps_and_move_n_minus_1_over_n(self, op):
        assert [steps_and_bytes(op, n) for n in (2, 8)] == [(1, 0.5), (7, pytest.approx(7 / 8))]

    def test_broadcast_pipelines_the_whole_payload_over_n_minus_1_steps(self):
        assert [steps_and_bytes("broadcast", n) for n in (2, 8)] == [(1, 1), (7, 1)]

    def test_overlap_is_four_all_reduces_of_a_quarter(self):
        assert steps_and_bytes("overlap", 4, "in_flight") == (4 * 6, 1.5)

    @pytest.mark.parametrize("n", [2, 16])
    def test_a_ping_pong_is_a_round_trip_whatever_the_world_size(self, n):
        assert steps_and_bytes("send_recv", n) == (2, 2) and steps_and_bytes("isend_irecv", n) == (2, 2)

    def test_the_send_recv_ring_sends_once(self):
        assert steps_and_bytes("send_recv", 8, "ring") == (1, 1)

    def test_a_case_is_its_calls_and_its_overhead(self):
        case = DistCase("all_reduce", 4, "gloo", 2)
        price = Price("gloo", GLOO_LOOPBACK, GLOO_LOOPBACK, GLOO_LOOPBACK)
        assert case_seconds(case, 10, 2, price, 0.5) == pytest.approx((2 + 10 * 100 + 1) * call_seconds(case, price) + 0.5)


class TestLinks:
    def test_a_pair_on_one_node_and_across_nodes_each_cross_their_own_link(self):
        price = Price("nccl", ETHERNET, NVLINK, INFINIBAND)
        intra = DistCase("send_recv", MIB, "nccl", 16, "cuda", crosses="intra-node")
        inter = DistCase("send_recv", MIB, "nccl", 16, "cuda", pair=(0, 8), crosses="inter-node")
        assert call_seconds(intra, price) == pytest.approx(NVLINK.call_s + 2 * NVLINK.step_s + 2 * MIB / 100e9)
        assert call_seconds(inter, price) == pytest.approx(INFINIBAND.call_s + 2 * INFINIBAND.step_s + 2 * MIB / 10e9)

    def test_nccl_reads_the_links_from_the_nodes_fingerprints(self):
        price = price_of("nccl", ["a"] * 8 + ["b"] * 8, {"a": node("a"), "b": node("b")})
        assert (price.intra, price.inter, price.collective, price.share) == (NVLINK, INFINIBAND, INFINIBAND, 1.0)
        assert price_of("nccl", ["a"] * 8, {"a": node("a")}).collective == NVLINK  # one node: its GPUs' links
        # a node without NVLink or HCA, or not described at all, is priced on the slower kind
        assert price_of("nccl", ["a"] * 8 + ["b"] * 8, {"a": node("a"), "b": node("b", nvlink=0)}).intra == PCIE
        bare = price_of("nccl", ["a"] * 8 + ["b"] * 8)
        assert (bare.intra, bare.inter, bare.collective) == (PCIE, ETHERNET, ETHERNET)

    def test_only_gloo_on_loopback_is_measured_the_rest_is_labelled_assumed(self):
        assert GLOO_LOOPBACK.measured and "assumed" not in GLOO_LOOPBACK.name
        for link in (NVLINK, PCIE, INFINIBAND, ETHERNET, GLOO_BETWEEN_HOSTS):
            assert not link.measured and "(assumed)" in link.name

    def test_gloo_across_hosts_is_no_faster_than_the_assumed_network(self):
        price = price_of("gloo", ["a", "a", "b", "b"], cpus=64)
        assert (price.intra, price.inter, price.collective) == (GLOO_LOOPBACK, GLOO_BETWEEN_HOSTS, GLOO_BETWEEN_HOSTS)
        assert GLOO_BETWEEN_HOSTS.gbps <= ETHERNET.gbps and GLOO_BETWEEN_HOSTS.step_s >= ETHERNET.step_s


class TestCrowdedHosts:
    def test_gloo_calls_slow_as_the_ranks_outnumber_the_cpus(self):
        case = DistCase("all_reduce", MIB, "gloo", 4)
        roomy, crowded = price_of("gloo", ["a"] * 4, cpus=8), price_of("gloo", ["a"] * 4, cpus=2)
        assert (roomy.share, crowded.share) == (1.0, 2.0)
        assert call_seconds(case, crowded) == pytest.approx(2 * call_seconds(case, roomy))

    def test_two_nodes_on_one_host_share_its_cpus(self):
        apart = price_of("gloo", ["a", "a", "b", "b"], {"a": node("a", cpus=2), "b": node("b", cpus=2)})
        together = price_of("gloo", ["a", "a", "b", "b"], {"a": node("here", cpus=2), "b": node("here", cpus=2)})
        assert (apart.share, together.share) == (1.0, 2.0)
        # each host's importing: its ranks and its nodes' torchrun agents over its CPUs
        assert apart.startup_s == pytest.approx(STARTUP_S + STARTUP_PROCESS_S * 3 / 2)
        assert together.startup_s == pytest.approx(STARTUP_S + STARTUP_PROCESS_S * 6 / 2)

    def test_nccl_calls_are_the_gpus_but_its_start_up_is_the_hosts(self):
        price = price_of("nccl", ["a"] * 8, {"a": node("a", cpus=2)})
        assert price.share == 1.0
        assert price.startup_s == pytest.approx(STARTUP_S + STARTUP_PROCESS_S * 9 / 2 + NCCL_STARTUP_S)
        assert price_of("nccl", ["a"] * 8, {"a": node("a", cpus=96)}).startup_s == pytest.approx(
            STARTUP_S + STARTUP_PROCESS_S + NCCL_STARTUP_S)


def test_the_start_up_is_counted_once_a_world():
    price = price_of("gloo", ["a"] * 2, cpus=2)
    cases = [DistCase(op, MIB, "gloo", 2) for op in ("all_reduce", "broadcast", "all_gather")]
    assert world_seconds([], 10, 2, price) == price.startup_s > 0
    assert world_seconds(cases, 10, 2, price) == pytest.approx(
        price.startup_s + sum(case_seconds(case, 10, 2, price) for case in cases))


def node(host, nvlink=18, hca=True, cpus=96, gpus=8):
    """A node's fingerprint as torchrun's roll call gathers it (only what the price reads)."""
    return {"machine": {"node": host}, "xferbench": {"host": {"cpu_count": cpus},
                                                     "devices": [{"nvlink_links": nvlink}] * gpus},
            "nics": [{"kind": "hca" if hca else "net"}]}
