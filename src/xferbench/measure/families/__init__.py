"""The scenario and concurrent families, one module each (docs/contributing.md, "Adding a scenario")."""
