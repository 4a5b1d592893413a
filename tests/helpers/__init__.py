"""Helpers shared by the test modules (imported as ``tests.helpers.<module>``; fixtures reach every
test module through ``tests/conftest.py``). A test module never imports another test module."""
