"""A torch.profiler trace: its copies and the waits they force, priced by the run's own fits (``xferbench price``)."""
