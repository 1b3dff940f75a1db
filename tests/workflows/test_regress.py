"""``mdae-fmu regress`` (issue 18): the reference models as a suite on a real LocalCluster of
2 workers (tests/conftest.py), JUnit XML and the HTML index; entries that fail to import or
to simulate are failed entries with their message; bad suite files are refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from lxml import etree

pytest.importorskip("distributed")

from mdae_fmu.cli import main  # noqa: E402
from mdae_fmu.regression import regress  # noqa: E402
from mdae_fmu.suite_file import _toml, load_suite  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SUITE = ROOT / "reference_models" / "suite.toml"


def test_reference_suite_passes_with_junit_and_index(reference_suite_run):
    """Every reference model with a reference CSV is in the suite, and each one passes; the
    JUnit XML has one passing testcase per model and the index links each model's report."""
    res, out = reference_suite_run
    suite = _toml().loads(SUITE.read_text())
    names = [m["name"] for m in suite["model"]]
    import json
    refs = json.loads((ROOT / "reference_models" / "references.json").read_text())
    with_csv = {m for entry in refs.values() for m in entry["models"]}
    assert {Path(m["test"]).stem for m in suite["model"]} == with_csv
    failed = [(e["name"], e.get("summary")) for e in res["entries"] if e["status"] != "pass"]
    assert failed == []
    root = etree.parse(str(out / "junit.xml")).getroot()
    ts = root.find("testsuite")
    assert ts.get("tests") == str(len(names)) and ts.get("failures") == "0"
    assert ts.get("errors") == "0"
    assert [c.get("name") for c in ts.findall("testcase")] == names
    index = (out / "index.html").read_text()
    for e in res["entries"]:
        assert f'href="{e["report"]}"' in index and (out / e["report"]).exists()


@pytest.fixture(scope="module")
def broken_suite(tmp_path_factory, clutch_baselines):
    """A suite with a model that does not parse, an FMU that fails at its engagement event
    (restart singular for j1 + j2 = 0), a wrong-restart FMU and a passing FMU."""
    import shutil
    d = tmp_path_factory.mktemp("broken_suite")
    for fmu in clutch_baselines:
        shutil.copy(fmu, d / fmu.name)
    (d / "Broken.mo").write_text("class Broken\n  Real x(start = 1);\nequation\n  der(x) = ;\n"
                                 "end Broken;\n")
    (d / "ref.csv").write_text((ROOT / "reference_models" / "ClutchBasic.csv").read_text())
    suite = d / "suite.toml"
    suite.write_text('''[suite]
name = "broken"
[[model]]
name = "Broken"
test = "Broken.mo"
reference = "ref.csv"
[[model]]
name = "Singular"
test = "ClutchBasic.fmu"
reference = "ref.csv"
start_values = { j1 = -2.0, j2 = 2.0 }
[[model]]
name = "WrongRestart"
test = "ClutchBasic_wrong_restart.fmu"
reference = "ref.csv"
[[model]]
name = "Baseline"
test = "ClutchBasic.fmu"
reference = "ref.csv"
''')
    return suite


def test_failing_entries_keep_their_message(broken_suite, dask_client, tmp_path):
    res = regress(broken_suite, output_dir=tmp_path, client=dask_client)
    by = {e["name"]: e for e in res["entries"]}
    assert [e["name"] for e in res["entries"]] == ["Broken", "Singular", "WrongRestart",
                                                   "Baseline"]
    assert by["Broken"]["status"] == "error" and "Broken.mo:4:" in by["Broken"]["message"]
    assert by["Singular"]["status"] == "error"
    assert "simulation failed" in by["Singular"]["message"]
    assert by["WrongRestart"]["status"] == "fail"
    assert "w1 leaves at t = 5" in by["WrongRestart"]["summary"]
    assert by["Baseline"]["status"] == "pass" and not res["passed"]
    ts = etree.parse(str(tmp_path / "junit.xml")).getroot().find("testsuite")
    assert (ts.get("tests"), ts.get("failures"), ts.get("errors")) == ("4", "1", "2")
    cases = {c.get("name"): c for c in ts.findall("testcase")}
    assert "Broken.mo:4:" in cases["Broken"].find("error").get("message")
    assert "w1: leaves the tube at t = 5" in cases["WrongRestart"].find("failure").get("message")
    assert cases["Baseline"].find("failure") is None and cases["Baseline"].find("error") is None


def test_regress_command_exit_code_and_summary(broken_suite, dask_client, tmp_path, capsys):
    code = main(["regress", str(broken_suite), "--output-dir", str(tmp_path),
                 "--scheduler", dask_client.scheduler.address])
    out = capsys.readouterr()
    assert code == 1
    assert "1 of 4 passed" in out.out and "WrongRestart" in out.out
    assert "Broken: " in out.err and "Traceback" not in out.err


@pytest.mark.parametrize("text, words", [
    ("[[model]]\ntest = 'x.mo'\n", "[[model]] #1: missing 'reference'"),
    ("[[model]]\ntest = 'x.mo'\nreference = 'nothere.csv'\n", "test"),
    ("[[model]]\ntest = 'a.mo'\nreference = 'b.csv'\ntolerance = 1\n", "unknown key 'tolerance'"),
    ("[[model]\n", "suite.toml:1:"),
])
def test_bad_suite_file_is_refused(tmp_path, capsys, text, words):
    p = tmp_path / "suite.toml"
    p.write_text(text)
    assert main(["regress", str(p), "--output-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert words in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def test_suite_paths_are_relative_to_the_suite_file():
    suite = load_suite(SUITE)
    assert suite.name == "reference_models"
    e = next(e for e in suite.entries if e.name == "ClutchGuarded")
    assert e.files["input"] == ("ClutchGuarded.input.csv",
                                SUITE.parent / "ClutchGuarded.input.csv")
    assert e.files["reference"][1].samefile(ROOT / "reference_models" / "ClutchBasic.csv")


def test_names_and_messages_are_escaped_in_html_and_junit():
    """A model name and an error message full of markup stay text in the index, the entry
    page and the JUnit XML."""
    from lxml import html as lhtml

    from mdae_fmu.report_html import entry_page, index_page, junit_xml
    name = '<script>alert("x")</script>&M'
    msg = 'M.mo:1:2: unexpected "<" & more'
    entry = {"name": name, "comparison": None, "status": "error", "message": msg,
             "seconds": 0.5, "summary": msg, "report": "models/M.html"}
    for page in (index_page("suite <1>", [entry]), entry_page(entry)):
        doc = lhtml.fromstring(page)
        assert not doc.xpath("//script")
        assert name in doc.text_content() and msg in doc.text_content()
    case = etree.fromstring(junit_xml("s&<", [entry]).encode()).find("testsuite/testcase")
    assert case.get("name") == name and case.find("error").get("message") == msg


# ---------------------------------------------------------------------------------------------
# Suite files checked against their schema before anything runs (issue 25 Deliver 6)
# ---------------------------------------------------------------------------------------------

_ENTRY = "[[model]]\ntest = \"a.mo\"\nreference = \"b.csv\"\n"


@pytest.mark.parametrize("extra, where, words", [
    ('rtol = "abc"', ":4:1:", 'rtol must be a non-negative number, got the string "abc"'),
    ("variables = 5", ":4:1:", "variables must be a non-empty array of variable names, got 5"),
    ('stop_time = "1"', ":4:1:", 'stop_time must be a positive number, got the string "1"'),
    ("stop_time = 0", ":4:1:", "stop_time must be a finite positive number, got 0\n"),
    ("atol = -1e-3", ":4:1:", "atol must be a finite non-negative number, got -0.001"),
    ("rtol = nan", ":4:1:", "rtol must be a finite non-negative number, got nan"),
    ("timeout = inf", ":4:1:", "timeout must be a finite positive number, got inf"),
    ("timeout = 1" + "0" * 400, ":4:1:", "timeout must be a finite positive number, got an "
     "integer of 401 digits"),     # float() overflowed: exit 3 (fuzz_export.py --surface suite)
    ("rtol = true", ":4:1:", "rtol must be a non-negative number, got the Boolean true"),
    ('variables = ["w1", 3]', ":4:1:", "variables must be an array of variable names; item 2 "
     "is 3"),
    ('method = "tub"', ":4:1:", "method must be one of tube, fmpy, got the string \"tub\" "
     "(did you mean 'tube'?)"),
    ('fmi_type = "cs"', ":4:1:", "fmi_type must be one of ModelExchange, CoSimulation, both"),
    ("start_values = { j1 = [1] }", ":4:1:", "start_values 'j1' must be a finite number, a "
     "Boolean or a string, got an array"),
    ("  rtl = 1e-3", ":4:3:", "unknown key 'rtl' (did you mean 'rtol'?)"),
    ("solver_tolerance = 1e-8\nrelative_tolerance = 1e-8", ":4:1:",
     "give relative_tolerance only"),
    ('name = ""', ":4:1:", "name must be a non-empty string"),
])
def test_hostile_entry_values_are_refused_at_their_line(tmp_path, capsys, extra, where, words):
    """Each wrong type, range or name is exit 2 at file:line:col of the key, with the line and
    a caret, before any export (no output folder); before, the first three became internal
    errors (exit 3) in the middle of the run."""
    (tmp_path / "a.mo").write_text("model a\nend a;\n")
    (tmp_path / "b.csv").write_text("time,x\n0,1\n1,1\n")
    p = tmp_path / "suite.toml"
    p.write_text(_ENTRY + extra + "\n")
    assert main(["regress", str(p), "--output-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert f"{p}{where} [[model]] #1: {words}" in err, err
    assert "^" in err and "Traceback" not in err and "internal" not in err
    assert not (tmp_path / "o").exists()


@pytest.mark.parametrize("text, words", [
    ('[suite]\nrtol = "1e-3"\n' + _ENTRY, ':2:1: [suite]: rtol must be a non-negative number'),
    ('[suite]\nname = "s"\nworkers = 2\n' + _ENTRY, ":3:1: [suite]: unknown key 'workers'"),
    ('[suit]\nrtol = 1e-3\n' + _ENTRY, "unknown table 'suit' (did you mean 'suite'?)"),
    (_ENTRY + _ENTRY.replace('"a.mo"', '"c.mo"') + 'name = "a"\n',
     ":7:1: [[model]] #2: name 'a' is used twice"),
    (_ENTRY.replace("b.csv", "sub"), ":3:1: [[model]] #1: reference "),
    ("model = 3\n", "no [[model]] entries"),
    ("[[model]]\ntest = 'a.mo'\nreference = 'b.csv'\ninput = 'nothere.csv'\n",
     ":4:1: [[model]] #1: input "),
])
def test_hostile_suite_files_are_refused(tmp_path, capsys, text, words):
    (tmp_path / "a.mo").write_text("model a\nend a;\n")
    (tmp_path / "c.mo").write_text("model c\nend c;\n")
    (tmp_path / "b.csv").write_text("time,x\n0,1\n1,1\n")
    (tmp_path / "sub").mkdir()
    p = tmp_path / "suite.toml"
    p.write_text(text)
    assert main(["regress", str(p), "--output-dir", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert words in err, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_suite_file_that_is_not_text_is_refused(tmp_path, capsys):
    p = tmp_path / "suite.toml"
    p.write_bytes(b"[[model]]\ntest = '\xff\xfe'\n")
    assert main(["regress", str(p)]) == 2
    assert f"{p}:2:9: not a UTF-8 text file (a suite file is TOML)" in capsys.readouterr().err


def test_both_interfaces_make_two_entries(tmp_path, capsys):
    """fmi_type = "both": the entry runs once per interface; the FMU whose Co-Simulation
    side freezes passes as Model Exchange and fails as Co-Simulation; the reports name the
    files as the suite writes them, never a temporary folder."""
    import step_fmus
    d = tmp_path / "suite"
    d.mkdir()
    step_fmus.build_counter(d, "frozen")
    step_fmus.reference_csv(d / "counter.csv")
    (d / "suite.toml").write_text('[[model]]\nname = "Counter"\ntest = "Counter_frozen.fmu"\n'
                                  'reference = "counter.csv"\nfmi_type = "both"\n')
    out = tmp_path / "out"
    assert main(["regress", str(d / "suite.toml"), "--output-dir", str(out), "--serial"]) == 1
    printed = capsys.readouterr().out
    assert "Counter (ModelExchange)  PASS" in printed
    assert "Counter (CoSimulation)   FAIL" in printed and "1 of 2 passed" in printed
    pages = [p.read_text() for p in (out / "models").iterdir()] + [
        (out / "index.html").read_text(), (out / "junit.xml").read_text()]
    assert any("<code>Counter_frozen.fmu</code>" in page for page in pages)
    assert not any("mdae_regress_" in page or str(d) in page for page in pages)


def test_messages_name_the_suite_files(broken_suite, tmp_path):
    """Run here (no cluster): the error of the entry that does not parse names Broken.mo as
    the suite writes it, in the result, the pages and the JUnit XML; the pages and the XML
    have the permissions of the user's umask."""
    old_mask = os.umask(0o027)
    try:
        res = regress(broken_suite, output_dir=tmp_path, executor="serial")
    finally:
        os.umask(old_mask)
    by = {e["name"]: e for e in res["entries"]}
    assert by["Broken"]["message"].startswith("Broken.mo:4:")
    assert res["executed"].executor == "serial"
    for page in [*(tmp_path / "models").iterdir(), tmp_path / "index.html",
                 tmp_path / "junit.xml"]:
        text = page.read_text()
        assert str(broken_suite.parent) not in text and "mdae_regress_" not in text, page
        # the user's umask (0o027 here), as open() gives: the pages were 0600 before
        assert stat.S_IMODE(page.stat().st_mode) == 0o640, page
