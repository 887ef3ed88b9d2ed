"""Transfers between processes with torch.distributed: a world of 2 on this machine.

Both ranks are helper processes (rendezvous over loopback TCP) that this pytest process
hands each case over a plain socket, with a deadline: a rank that dies or hangs fails
its case and the session goes on.
send_recv and isend_irecv are ping-pongs (one call = a round trip), each way round;
broadcast, all_reduce, all_gather, reduce_scatter, all_to_all and overlap (four
all_reduces in flight or one by one) are collectives over the size sweep. Every rank
times every round, a round counts as its slowest rank's, and every op's output is
checked after timing. gloo on CPU tensors, nccl with one GPU per rank. Across nodes,
use ``torchrun ... -m xferbench.distributed`` (see docs/benchmarks.md).
"""


def test_distributed(xfer_dist_case, xfer_dist):
    xfer_dist(xfer_dist_case)
