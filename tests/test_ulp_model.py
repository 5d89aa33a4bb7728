"""An upper layer's declaration (analysis/ulp.py) is checked when it is declared: what a view, an export
or stats would trip on later is refused at once, with the protocol and the fact named."""
from __future__ import annotations

import pytest

from rdmaspy.analysis import ulp


def _model(protocol: str, *facts: ulp.Fact, lead: tuple[str, ...] = ()) -> ulp.UlpModel:
    return ulp.UlpModel(protocol=protocol, rank=99, label="Test", key="Tag", key_digits=4, request="ask",
                        response="answer", lists={}, done="", facts=facts, operation=lambda t: "op", lead=lead)


@pytest.fixture
def registry(monkeypatch):
    ulp.load_modules()
    monkeypatch.setattr(ulp, "ULPS", dict(ulp.ULPS))
    return ulp.ULPS


def test_a_lead_fact_must_be_one_of_the_models_own(registry):
    with pytest.raises(ValueError, match="ulptest: lead fact ulptest_missing"):
        ulp.declare(_model("ulptest", ulp.Fact("ulptest_tag", "u16", "Tag", lambda t: 1), lead=("ulptest_missing",)))
    assert "ulptest" not in ulp.ULPS


def test_the_lead_facts_are_shown_first_the_rest_in_declared_order(registry):
    a, b, c = (ulp.Fact(f"ulptest_{n}", "u32", n, lambda t: 1) for n in "abc")
    model = ulp.declare(_model("ulptest", a, b, c, lead=("ulptest_c",)))
    assert model.shown_facts() == (c, a, b)
    assert model.facts == (a, b, c)           # the export's columns keep the declared order


def test_a_fact_of_unknown_kind_or_another_layers_column_is_refused(registry):
    with pytest.raises(ValueError, match="unknown kind"):
        ulp.declare(_model("ulptest", ulp.Fact("ulptest_x", "float128", "X", lambda t: 1)))
    with pytest.raises(ValueError, match="declared by another upper layer"):
        ulp.declare(_model("ulptest", ulp.Fact("xid", "u32", "XID", lambda t: 1)))
