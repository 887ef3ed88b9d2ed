"""What pyproject.toml cannot say: the packages are every one found under src/xferbench plus bench/, shipped as
xferbench.bench (pyproject's package-dir maps it; setuptools' find cannot see a mapped folder). Found, not listed,
so a new family folder needs no line here; only xferbench's, so a stray folder under src/ (a scratchpad with an
__init__.py) never becomes a package of the wheel."""

from setuptools import find_packages, setup

setup(packages=[*find_packages("src", include=["xferbench", "xferbench.*"]), "xferbench.bench"])
