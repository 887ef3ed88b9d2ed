"""The analysis side: results, model, plots, findings, report, compare, history, expectations. Never imports torch."""
