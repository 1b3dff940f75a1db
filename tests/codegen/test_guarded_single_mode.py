"""A single-mode model on the guarded schedule (issue 26 Deliver 1, docs/multimode.md
"Single-mode models on the guarded schedule"): the chain of benchmarks/guarded_stages.py has
one-equation blocks, its blocks of every mode are printed as loops over a slot table
(codegen.runs), and its FMU computes what the per-mode FMU computes, row for row; the save of
that analysis loads back and exports the same FMU. The implicit analysis of a single-mode
model is asked for by name (`analysis.guarded_analysis`, the oracle of docs/theory.md §10.14;
no product route builds it for such a model, docs/decisions.md §19): ``implicit=True`` is the
default."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from zipfile import ZipFile

import numpy as np
import pytest

pytest.importorskip("dd")
from fmpy import simulate_fmu  # noqa: E402

from mdae_fmu import api  # noqa: E402
from mdae_fmu.analysis import guarded_analysis  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
from guarded_stages import chain  # noqa: E402

N = 24


def _run(fmu: Path, names: list[str]) -> np.ndarray:
    res = simulate_fmu(str(fmu), stop_time=2.0, relative_tolerance=1e-10,
                       output_interval=0.02, fmi_type="ModelExchange", output=names)
    return np.array(res.tolist(), dtype=float)


def test_chain_on_the_guarded_schedule_is_the_per_mode_fmu(tmp_path):
    path = tmp_path / f"Chain{N}.mo"
    path.write_text(chain(N))
    model = api.load(path)
    guarded = guarded_analysis(model, None)
    assert guarded.accepted and guarded.guarded is not None
    variants = guarded.guarded.variants
    assert len(variants) == 2 * N
    # every block is one undifferentiated equation: its tree and its one row
    assert all(len(v.block.rows) == 1 and v.block.tree is not None for v in variants)
    assert all(v.restart is None for v in variants)
    by_label = {v.block.label: v for v in variants}
    x_of = {n: k for k, n in enumerate(guarded.guarded.variables)}
    # y5 = 2 x5 + ... reads x5 at order 0 (a state: no jump read); der(x6) = y5 - x6 reads
    # the algebraic y5, whose impulse it would read
    reads_y = [v for v in variants if x_of["y5"] in v.reads]
    assert [v.block.unknowns[0].name for v in reads_y] == ["der(x6)"]
    assert len(by_label) == 2 * N                      # (labels are unique)

    names = [v.name for v in model.variables]
    runs = {}
    for key, a in (("guarded", guarded), ("per_mode", api.analyze(model))):
        fmu = tmp_path / f"{key}.fmu"
        api.export_fmu(model, fmu, analysis=a, progress=False)
        runs[key] = _run(fmu, names)
        if key == "guarded":
            with ZipFile(fmu) as z:
                c = z.read("sources/model_guarded_0.c").decode()
            # one loop over the y blocks and one over the der(x) blocks, no block printed alone
            assert c.count("copies of") == 2 and "block 0:" not in c
    assert runs["guarded"].shape == runs["per_mode"].shape
    assert np.array_equal(runs["guarded"], runs["per_mode"])

    saved = tmp_path / "saved.json"
    saved.write_text(json.dumps({"saved_analysis": api.save_analysis(model, guarded)}))
    model2, a2 = api.load_analysis(saved)
    fmu2 = tmp_path / "again.fmu"
    api.export_fmu(model2, fmu2, analysis=a2, progress=False)
    assert np.array_equal(_run(fmu2, names), runs["guarded"])


def _untimed(text: str) -> str:
    """An implicit report's text without its CPU times (``..., 0.01 s``, ``seconds``),
    which differ between two runs of one analysis."""
    return re.sub(r"\d+\.\d+ s\b", "(time)", text.split("seconds")[0])


def test_a_model_without_guards_uses_no_bdd_and_builds_its_report_when_read(monkeypatch,
                                                                            tmp_path):
    """A model without long guards has the formulas true and false only: its guard space is
    a `ConstantBDD` (no ``dd`` import), and the analysis and the schedule equal those built
    on a ``dd`` manager; the implicit report is built when first read, shared by the copies
    of the analysis, and equals the report of the ``dd`` analysis."""
    from mdae_fmu import analysis as A
    from mdae_fmu.implicit import formulas
    from mdae_fmu.implicit.analysis import render_json, render_text

    path = tmp_path / "Chain6.mo"
    path.write_text(chain(6))
    model = api.load(path)
    fast = A.guarded_analysis(model, None)
    report = vars(fast)["implicit_json"]
    assert isinstance(report, A.ImplicitReport) and not report.built
    assert isinstance(report.ia.space.bdd, formulas.ConstantBDD)
    copy = A.replace(fast, units=())
    assert vars(copy)["implicit_json"] is report and not report.built

    constant = formulas.ConstantBDD
    monkeypatch.setattr(formulas, "ConstantBDD", formulas.bdd_manager)
    slow = A.guarded_analysis(model, None)
    assert not isinstance(vars(slow)["implicit_json"].ia.space.bdd, constant)
    js_fast, js_slow = dict(fast.implicit_json), dict(slow.implicit_json)
    js_fast.pop("seconds"), js_slow.pop("seconds")
    assert js_fast == js_slow and report.built
    assert copy.implicit_json is fast.implicit_json           # built once, shared
    assert _untimed(fast.implicit_text) == _untimed(slow.implicit_text)
    assert _untimed(render_text(report.ia)) == _untimed(fast.implicit_text)
    assert render_json(report.ia)["blocks"] == js_fast["blocks"]
    a, b = fast.guarded, slow.guarded
    assert [v.block.label for v in a.variants] == [v.block.label for v in b.variants]
    assert [(v.writes, v.reads, v.formula) for v in a.variants] == \
        [(v.writes, v.reads, v.formula) for v in b.variants]
    assert (a.table, a.modes, a.states, a.impulse_outputs) == \
        (b.table, b.modes, b.states, b.impulse_outputs)


@pytest.mark.parametrize("source", ["Pendulum", "VanDerPol", "Dahlquist", "loops"])
def test_without_guards_the_analysis_order_is_a_valid_schedule(source, tmp_path):
    """In a model without guards the order of `guarded_schedule` (`_schedule_order`) is a
    valid schedule. Oracle: every instance a variant reads that another variant writes is
    written earlier (the Pendulum and the loop chain's pendulum have offsets c >= 1, the
    loop chain two-equation blocks)."""
    from gen_chain import loop_chain_model

    from mdae_fmu.structure.per_mode import symbol_table
    if source == "loops":
        path = tmp_path / "Loops.mo"
        path.write_text(loop_chain_model(6))
    else:
        path = ROOT / "reference_models" / f"{source}.mo"
    model = api.load(path)
    a = guarded_analysis(model, None)
    code = a.code_model or model
    assert a.accepted and a.guarded is not None
    table = symbol_table(code)
    variants = a.guarded.variants
    writer = {x: k for k, v in enumerate(variants) for x in v.written()}
    for k, v in enumerate(variants):
        for x in v.block.symbols(table):
            assert writer.get(x, -1) < k or writer[x] == k, (v.block.label, x)
    if source == "loops":
        assert any(len(v.block.unknowns) == 2 for v in variants)
        assert any(v.cons for v in variants)      # (the pendulum's constraint, c >= 1)


@pytest.mark.parametrize("source", ["Pendulum", "BouncingBall", "chain", "loops", "heat"])
def test_the_schedule_of_one_mode_is_its_block_schedule(source, tmp_path):
    """docs/theory.md §10.14: the default analysis of a model of one mode carries that mode's
    block schedule wrapped (`implicit.schedule.single_mode_schedule`, no second structural
    analysis), and its variants are those the implicit analysis' schedule builds
    (`analysis.guarded_analysis`, the oracle): the same blocks, each with formula true, no restart,
    the same unknowns, writes, reads and number of consistency rows, the same layout; its
    order is a valid schedule (every instance read is written earlier or by the block)."""
    import sympy as sp
    from gen_chain import loop_chain_model
    from gen_scalable import heat_conduction

    from mdae_fmu.structure.per_mode import symbol_table
    texts = {"chain": lambda: chain(8), "loops": lambda: loop_chain_model(5),
             "heat": lambda: heat_conduction(12)}
    if source in texts:
        path = tmp_path / f"{source}.mo"
        path.write_text(texts[source]())
    else:
        path = ROOT / "reference_models" / f"{source}.mo"
    model = api.load(path)
    one, oracle = api.analyze(model), guarded_analysis(model, None)
    assert one.accepted and one.guarded is not None and one.guarded.single is one.modes
    sched, ref = one.guarded, oracle.guarded
    assert sched.variants == () and sched.guards == () and sched.n_modes == 1
    assert (sched.variables, set(sched.states), set(sched.leading), sched.max_offset,
            sched.impulsive, sched.impulse_outputs, sched.cond_states) == \
        (ref.variables, set(ref.states), set(ref.leading), ref.max_offset, ref.impulsive,
         ref.impulse_outputs, ref.cond_states)
    mine = sched.block_variants()
    assert all(v.formula == -1 and v.restart is None and not v.merged for v in mine)

    def key(v):
        return (v.block.label, v.writes, v.reads, v.block.unknowns, len(v.cons))
    assert sorted(map(key, mine), key=str) == sorted(map(key, ref.variants), key=str)
    by_label = {v.block.label: v for v in ref.variants}
    for v in mine:
        w = by_label[v.block.label]
        assert (v.block.tree is None) == (w.block.tree is None)
        for a, b in zip(v.block.rows, w.block.rows):      # (differentiated: sympy rows)
            assert sp.simplify(a - b) == 0
    table = symbol_table(one.code_model or model)
    writer = {x: k for k, v in enumerate(mine) for x in v.written()}
    for k, v in enumerate(mine):
        for x in v.block.symbols(table):
            assert writer.get(x, -1) <= k, (v.block.label, x)


@pytest.mark.parametrize("source", ["BouncingBall", "ClutchBasic"])
def test_implicit_is_the_default(source, tmp_path, capsys):
    """docs/decisions.md §19: ``implicit=True`` analyses every model as the default does (a
    single-mode model: its per-mode analysis with its mode's schedule wrapped, no implicit
    analysis of its own; a multimode one: the one analysis), and ``analyze --implicit``
    prints the default's summary, ``-v`` report and ``--json`` (CPU times aside), so that
    ``export --implicit`` has no second route to an FMU."""
    from mdae_fmu.cli import main
    path = ROOT / "reference_models" / f"{source}.mo"
    model = api.load(path)
    a, b = api.analyze(model), api.analyze(model, implicit=True)
    assert a.accepted and b.accepted
    if source == "BouncingBall":
        assert b.modes is not None and b.guarded.single is b.modes
        assert b.implicit_json is None            # (no implicit analysis, none to print)
    else:
        assert a.modes is None and b.modes is None and b.guarded.single is None
    assert b.guarded.variants == a.guarded.variants

    def printed(*options, untimed=True):
        assert main(["analyze", *options, str(path)]) == 0
        text = capsys.readouterr().out
        return re.sub(r"\d+\.\d+(e-?\d+)?( s\b|,$)", "(time)", text, flags=re.M) \
            if untimed else text
    for options in ((), ("-v",)):
        assert printed(*options, "--implicit") == printed(*options), options
    # (the saved analysis holds the implicit report with its CPU times: compared without)
    js = [json.loads(printed("--json", *more, untimed=False)) for more in ((), ("--implicit",))]
    for out in js:
        out.pop("seconds", None)
        assert out.pop("saved_analysis")["format"] == "mdae_fmu.saved-analysis/3"
    assert js[0] == js[1]
