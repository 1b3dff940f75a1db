"""``mdae-fmu regress`` (issue 18): the reference models as a suite on a real LocalCluster of
2 workers (tests/conftest.py), JUnit XML and the HTML index; entries that fail to import or
to simulate are failed entries with their message; bad suite files are refused."""

from __future__ import annotations

from pathlib import Path

import pytest
from lxml import etree

pytest.importorskip("distributed")

from mdae_fmu.cli import main  # noqa: E402
from mdae_fmu.regression import _toml, load_suite, regress  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SUITE = ROOT / "reference_models" / "suite.toml"


@pytest.mark.slow
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
    name, entries = load_suite(SUITE)
    assert name == "reference_models"
    e = next(e for e in entries if e.name == "ClutchGuarded")
    assert e.files["input"][0] == "ClutchGuarded.input.csv"
    assert e.files["reference"][1] == (ROOT / "reference_models" / "ClutchBasic.csv").read_bytes()


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
