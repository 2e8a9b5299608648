"""Session-wide settings for the modules of tests/python."""

# Modules that take minutes on the 2-core machine (pytest --durations on
# 2026-11-27: Spark 870 s, the report 700 s, Airflow 310 s, the streamed
# scrapes 240 s, the property tests 230 s, of 4,170 s in all). make test runs
# the suite on two workers, a module to a worker (--dist loadfile), handed out
# in collection order: alphabetically test_spark.py went out near the end and
# one worker ran it alone while the other had nothing left. Handed out first,
# they run beside the short modules instead.
LONG_MODULES = ("test_spark.py", "test_report.py", "test_airflow.py", "test_cli_stream_scrapes.py",
                "test_properties.py")


def pytest_collection_modifyitems(session, config, items):
    rank = {name: position for position, name in enumerate(LONG_MODULES)}
    # Stable: each module's tests stay together and in their order.
    items.sort(key=lambda item: rank.get(item.path.name, len(LONG_MODULES)))
