"""What the scenario and concurrent families share on the measuring side, and the registry that plans, runs and
prices their cases; each family is a folder of ``xferbench.families`` (docs/contributing.md, "Adding a scenario")."""
