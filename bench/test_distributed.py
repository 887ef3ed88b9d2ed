"""Transfers between processes with torch.distributed: a world of 2 on this machine.

Rank 0 is this pytest process, rank 1 a helper process; rendezvous over loopback TCP.
send_recv and isend_irecv are ping-pongs (one call = a round trip), each way round;
broadcast, all_reduce, all_gather, reduce_scatter, all_to_all and overlap (four
all_reduces in flight or one by one) are collectives over the size sweep. Every rank
times every round, a round counts as its slowest rank's, and every op's output is
checked after timing. gloo on CPU tensors, nccl with one GPU per rank. Across nodes,
use ``torchrun ... -m xferbench.distributed`` (see the README).
"""


def test_distributed(xfer_dist_case, xfer_dist):
    xfer_dist(xfer_dist_case)
