from tests.tasks.conftest import tiny_init  # noqa: F401 (a fixture)
