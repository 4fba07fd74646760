"""Helpers that more than one test package uses, one module per thing they hold (events.py,
smart_grid.py, spark.py, ...). A test module imports, from `tests`, only this package and modules
of its own package (tests/test_test_layout.py holds the rule); pytest fixtures that several
packages use are in tests/conftest.py."""
