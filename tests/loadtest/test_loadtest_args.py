"""The load test's command line: `--think` replaces a scenario's pace (issue 10: sizing how
much connected but slow players cost), and a bad range is refused with a clear message."""

from __future__ import annotations

import argparse

import pytest

from trix.loadtest.runner import add_loadtest_arguments, scenario_of
from trix.loadtest.scenarios import SCENARIOS


def _parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="trix loadtest")
    add_loadtest_arguments(parser)
    return parser.parse_args(list(argv))


def test_think_override_replaces_only_the_scenarios_pace() -> None:
    churn = scenario_of(_parse("churn", "--think", "6,7"))
    assert (churn.think_min_s, churn.think_max_s) == (6.0, 7.0)
    # everything else of the scenario stays: churn still cuts players and churns the queue
    assert churn.disconnect_per_min == SCENARIOS["churn"].disconnect_per_min > 0
    assert churn.queue_churn == SCENARIOS["churn"].queue_churn > 0
    assert scenario_of(_parse("steady", "--think", "4")).think_max_s == 4.0  # one value: fixed think time


def test_without_think_the_scenario_keeps_its_own_pace() -> None:
    assert scenario_of(_parse("steady")) == SCENARIOS["steady"]


@pytest.mark.parametrize("bad", ["3,1", "-1,2", "fast", "1,x"])
def test_think_range_must_be_min_not_above_max_and_non_negative(bad: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parse("steady", "--think", bad)
    assert exit_info.value.code == 2
    assert "--think" in capsys.readouterr().err
