"""The measuring side: devices, cases, timing, transfers, scenarios, distributed, machine, plugin. Needs torch."""
