"""The benchmark (``nox -s bench``): its runner and its stages, each writing rows and a report."""
