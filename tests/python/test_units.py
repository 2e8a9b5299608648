"""Unit economics: gpucost.unit_costs, gpucost.vllm_tokens (counter resets)
and gpucost.token_costs (cost per million input and output tokens per model
and team)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import gpucost
from scenarios import concat, inventory, lines, series, ts


def counter(metric, pod, model, values, start="2026-03-02 00:00", every="30min", namespace="serving"):
    t = pd.date_range(ts(start), periods=len(values), freq=every)
    return pd.DataFrame({"timestamp": t, "__name__": metric, "namespace": namespace, "pod": pod,
                         "model_name": model, "value": np.asarray(values, dtype=float)})


@pytest.fixture()
def serving():
    """Two vLLM pods on one 2-GPU instance at $8/h for 2 h ($8 per pod):
    llm-0 serves llama and restarts twice; llm-1 serves two models."""
    costs = lines("i-inf", "2026-03-02 00:00", 2, 8.0)
    usage = concat(series("i-inf", 0, "serving/llm-0", "2026-03-02 00:00", "2026-03-02 02:00", 0.4),
                   series("i-inf", 1, "serving/llm-1", "2026-03-02 00:00", "2026-03-02 02:00", 0.4))
    workloads = pd.DataFrame({"consumer": ["serving/llm-0", "serving/llm-1"], "team": ["chat", "search"]})
    counters = concat(
        # Resets after 3000 and after 600: increases 1000 + 2000 + 500 + 1000.
        counter("vllm:prompt_tokens_total", "llm-0", "llama", [0, 1000, 3000, 500, 1500]),
        counter("vllm:generation_tokens_total", "llm-0", "llama", [0, 200, 600, 100, 300]),
        counter("vllm:prompt_tokens_total", "llm-1", "llama", [0, 3000]),
        counter("vllm:prompt_tokens_total", "llm-1", "mistral", [0, 1000]),
        counter("vllm:generation_tokens_total", "llm-1", "mistral", [0, 4000]),
        counter("vllm:num_requests_running", "llm-1", "mistral", [3, 4]),  # a gauge: ignored
    )
    return usage, costs, inventory("i-inf", 2), workloads, counters


def test_vllm_tokens_handles_counter_resets(serving):
    *_, counters = serving
    tokens = gpucost.vllm_tokens(counters)
    llama0 = tokens[(tokens["consumer"] == "serving/llm-0")]
    assert llama0.groupby("unit")["units"].sum().to_dict() == {"input_tokens": 4500.0, "output_tokens": 900.0}
    assert tokens.attrs["counter_resets"] == 2
    assert tokens.attrs["rows_ignored"] == 2
    assert (tokens["units"] > 0).all()
    # Only the reset samples count their whole value.
    assert llama0[llama0["unit"] == "input_tokens"]["units"].tolist() == [1000, 2000, 500, 1000]


def test_token_costs_per_model_and_team(serving):
    usage, costs, inv, workloads, counters = serving
    alloc = gpucost.allocate(costs, usage, inv, workloads)
    out = gpucost.token_costs(alloc, counters, workloads).set_index(["model", "team"])
    # llm-0 ($8) serves llama only; llm-1 ($8) served 3000 llama and 5000
    # mistral tokens: 3/8 of its cost to llama, 5/8 to mistral.
    chat = out.loc[("llama", "chat")]
    assert (chat["input_tokens"], chat["output_tokens"], chat["cost"]) == (4500, 900, pytest.approx(8.0))
    assert chat["cost_per_million_input_tokens"] == pytest.approx(8.0 / 4500 * 1e6)   # $1,777.78
    assert chat["cost_per_million_output_tokens"] == pytest.approx(8.0 / 900 * 1e6)   # $8,888.89
    search_llama = out.loc[("llama", "search")]
    assert search_llama["cost"] == pytest.approx(3.0)
    assert np.isnan(search_llama["cost_per_million_output_tokens"])
    mistral = out.loc[("mistral", "search")]
    assert mistral["cost"] == pytest.approx(5.0)
    assert mistral["cost_per_million_output_tokens"] == pytest.approx(5.0 / 4000 * 1e6)
    assert out["cost"].sum() == pytest.approx(16.0)
    assert out.attrs["cost_without_tokens"] == 0.0


def test_token_costs_by_period(serving):
    usage, costs, inv, workloads, counters = serving
    alloc = gpucost.allocate(costs, usage, inv, workloads, by=["consumer", "period"], freq="h")
    out = gpucost.token_costs(alloc, counters, workloads, by=["model"], freq="h")
    assert out["cost"].sum() == pytest.approx(16.0)
    llama = out[out["model"] == "llama"].set_index("period")
    # Hour 00:00: llm-0's 1000 and llm-1's 3000 (both at 00:30); llm-0's 2000 lands at 01:00.
    assert llama.loc[ts("2026-03-02 00:00"), "input_tokens"] == 4000
    with pytest.raises(gpucost.InvalidInputError, match="parameter 'freq'"):
        gpucost.token_costs(alloc, counters, workloads, by=["model"])


def test_unit_costs_samples_per_team():
    costs = lines("i-t", "2026-03-02 00:00", 1, 10.0)
    usage = concat(series("i-t", 0, "a", "2026-03-02 00:00", "2026-03-02 01:00", 0.9),
                   series("i-t", 1, "b", "2026-03-02 00:00", "2026-03-02 01:00", 0.9))
    workloads = pd.DataFrame({"consumer": ["a", "b"], "team": ["vision", "vision"]})
    alloc = gpucost.allocate(costs, usage, inventory("i-t", 2), workloads, by=["team"])
    units = pd.DataFrame({"consumer": ["a", "b", "a", "ghost"], "units": [1000, 3000, 2, 7.0],
                          "unit": ["samples", "samples", "epochs", "samples"]})
    out = gpucost.unit_costs(alloc, units, workloads).set_index(["team", "unit"])
    assert out.loc[("vision", "samples"), "units"] == 4000
    assert out.loc[("vision", "samples"), "cost_per_unit"] == pytest.approx(10.0 / 4000)
    assert out.loc[("vision", "epochs"), "cost_per_unit"] == pytest.approx(5.0)
    # "ghost" is not in the workloads: its units are __unlabelled__ with no cost.
    assert out.loc[("__unlabelled__", "samples"), "cost"] == 0.0
    assert out.attrs["units_without_cost"] == 1
    assert out.attrs["cost_without_units"] == 0.0


def test_bad_units_and_counters(serving):
    usage, costs, inv, workloads, counters = serving
    alloc = gpucost.allocate(costs, usage, inv, workloads)
    with pytest.raises(gpucost.InvalidInputError, match="units: row 1, column 'units'"):
        gpucost.unit_costs(alloc, pd.DataFrame({"consumer": ["a", "b"], "units": [1.0, -2.0], "unit": "samples"}))
    with pytest.raises(gpucost.InvalidInputError, match="units: missing required column 'unit'"):
        gpucost.unit_costs(alloc, pd.DataFrame({"consumer": ["a"], "units": [1.0]}))
    bad = counters.copy()
    bad.loc[2, "value"] = np.nan
    with pytest.raises(gpucost.InvalidInputError, match="counters: row 2, column 'value'"):
        gpucost.vllm_tokens(bad)
    with pytest.raises(gpucost.InvalidInputError, match="'team' is not a label column"):
        gpucost.token_costs(alloc, counters)
