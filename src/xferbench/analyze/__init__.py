"""The analysis side: results, model, plots, findings, report, compare, history. Never imports torch."""
