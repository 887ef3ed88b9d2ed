"""The hardware: devices and their backend, the machine fingerprint and its probes, GPU link classes, page faults."""
