"""Printing a fuzzing suite's counts in the test run's output, where the lead can quote them."""

import pytest


def report_line(config: pytest.Config, line: str) -> None:
    """Write `line` to the terminal, past output capturing (fixture teardown is captured too)."""
    capture = config.pluginmanager.getplugin("capturemanager")
    reporter = config.pluginmanager.getplugin("terminalreporter")
    if reporter is None:
        return
    with capture.global_and_fixture_disabled():
        reporter.write_line(line)
