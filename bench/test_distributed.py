"""Transfers between processes with torch.distributed: a world of 2 on this machine.

Rank 0 is this pytest process, rank 1 a helper process; rendezvous over loopback TCP.
send_recv and isend_irecv are ping-pongs (one call = a round trip); broadcast,
all_reduce, all_gather and reduce_scatter are collectives over the size sweep. gloo
on CPU tensors, nccl with one GPU per rank. Across nodes, use
``torchrun ... -m xferbench.distributed`` (see the README).
"""


def test_distributed(xfer_dist_case, xfer_dist):
    xfer_dist(xfer_dist_case)
