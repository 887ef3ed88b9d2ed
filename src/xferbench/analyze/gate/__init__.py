"""Regression gates: compare, noise, interleaved A/B blocks, and what a GPU run should show."""
