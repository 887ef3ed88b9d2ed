"""The report: one HTML page, its findings, figures, CSV and Markdown, all read from the run's view."""
