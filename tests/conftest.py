"""Session-wide test setup.

FMPy 0.3.32 routes every FMU's log messages through one native proxy (fmpy/logging) that
remembers the Python logger of the *last* callbacks struct it was given. Tests create many FMU
instances with their own loggers; once such a struct is garbage collected, an FMU that logs
through FMPy's default callbacks calls freed memory and the test process crashes. Keep every
struct handed to the proxy alive for the session (mdae_fmu.fmu_child passes its own logger for
the same reason).

OpenBLAS (numpy's and scipy's) runs one thread per test process: this is read when the library
loads, so it is set before anything imports numpy, and the xdist workers and the CLI and host
subprocesses inherit it. With its default of a thread per core, every small matrix product
(an expm of 4 x 4 in an oracle) wakes threads that spin for their share on cores the other
workers use: on the shared 2-core machine 3.9 ms of CPU per 4 x 4 expm instead of 0.04 ms,
reference_models/make_references.py 81.7 s of CPU instead of 3.4 s (byte-identical output;
docs/testing.md "Stop 37"). A value set beforehand wins."""

import os

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import fmpy.logging as _fmpy_logging  # noqa: E402

_original_add_logger_proxy = _fmpy_logging.addLoggerProxy
_callbacks_kept_alive = []


def _add_logger_proxy_keeping_callbacks(ref):
    _callbacks_kept_alive.append(getattr(ref, "_obj", ref))
    _original_add_logger_proxy(ref)


_fmpy_logging.addLoggerProxy = _add_logger_proxy_keeping_callbacks


# ---------------------------------------------------------------------------------------------
# SUNDIALS: Co-Simulation FMUs embed CVODE (libsundials-dev). Tests marked
# ``requires_sundials`` are skipped, loudly, when it is missing; with MDAE_REQUIRE_SUNDIALS=1
# (set by .ci/run) they fail instead, so CI can never skip them silently.
# ---------------------------------------------------------------------------------------------

import pytest  # noqa: E402

_SUNDIALS_SKIP = "NO SUNDIALS, Co-Simulation test skipped"


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "requires_sundials: builds Co-Simulation FMUs (needs SUNDIALS CVODE); "
        "skipped without it, failed without it when MDAE_REQUIRE_SUNDIALS=1")
    config.addinivalue_line(
        "markers", "quick: the inner-loop selection (-m quick): the tests of QUICK_MODULES "
        "(tests/conftest.py) not marked slow or long; set by the conftest, never by hand")
    _share_builds(config)
    if os.environ.get("MDAE_FMU_TEST_BUILD_CACHE") == "1":
        # off by default: a run served a stale library for a changed model (a key that misses
        # an input of the build; tests/importers/test_variable_subscript.py failed with it)
        _use_build_cache(config)


# ---------------------------------------------------------------------------------------------
# Compiled FMU libraries are kept in the pytest cache (.pytest_cache/d/mdae-fmu-builds), keyed
# by the hash of their generated sources, flags and compiler (mdae_fmu/fmu/build_cache.py):
# an FMU whose C did not change is compiled once, whichever test, worker or run builds it.
# MDAE_FMU_BUILD_CACHE set beforehand wins (empty: no cache); -p no:cacheprovider: no cache.
# ---------------------------------------------------------------------------------------------

BUILD_CACHE_MAX_BYTES = 1 << 30
_BUILD_CACHE_SET = pytest.StashKey[bool]()


def _use_build_cache(config):
    from mdae_fmu.fmu.build_cache import CACHE_ENV
    cache = getattr(config, "cache", None)
    if CACHE_ENV in os.environ or cache is None:
        return
    os.environ[CACHE_ENV] = str(cache.mkdir("mdae-fmu-builds"))
    config.stash[_BUILD_CACHE_SET] = True


# ---------------------------------------------------------------------------------------------
# FMUs built once per run (tests/fmu_files.py `shared_build`): the controller creates their
# directory before pytest-xdist starts the workers (they inherit the variable), and removes it
# at the end; a directory named beforehand in the variable is kept.
# ---------------------------------------------------------------------------------------------

_SHARED_DIR_SET = pytest.StashKey[str]()


def _share_builds(config):
    import tempfile

    from fmu_files import SHARED_ENV
    if hasattr(config, "workerinput") or os.environ.get(SHARED_ENV):
        return
    os.environ[SHARED_ENV] = tempfile.mkdtemp(prefix="mdae_fmu_shared_")
    config.stash[_SHARED_DIR_SET] = os.environ[SHARED_ENV]


def pytest_unconfigure(config):
    """The controller (not an xdist worker) removes the shared build directory it made and
    trims the build cache it set up to its bound."""
    shared = config.stash.get(_SHARED_DIR_SET, None)
    if shared is not None:
        import shutil
        shutil.rmtree(shared, ignore_errors=True)
    if config.stash.get(_BUILD_CACHE_SET, False) and not hasattr(config, "workerinput"):
        from pathlib import Path

        from mdae_fmu.fmu.build_cache import CACHE_ENV, prune
        prune(Path(os.environ[CACHE_ENV]), BUILD_CACHE_MAX_BYTES)


# ---------------------------------------------------------------------------------------------
# The quick selection, `bash scripts/test.sh -m quick` (CONTRIBUTING.md): about a minute on two
# cores. It is an allow-list of modules that build no FMU (import, structure, modes, codegen
# without gcc, documents), minus their tests marked `slow` or `long`: a new module is outside it
# until it is added here, so the selection cannot grow slow unnoticed. test_lint.py (mypy from
# a fresh cache, about 25 s of CPU) is run on its own before a commit.
# ---------------------------------------------------------------------------------------------

QUICK_MODULES = frozenset({
    "test_analyze_memory.py", "test_analyze_summary.py", "test_block_shape.py",
    "test_bounded_work.py", "test_formula_text.py",
    "test_builtin_named_args.py", "test_clocked_refusal.py", "test_codegen_blocks.py",
    "test_docs.py", "test_callback_parts.py", "test_fast_parser.py", "test_flat_modelica.py",
    "test_fmu_archive.py",
    "test_guard_pruning.py", "test_heap_release.py", "test_implicit_analysis.py",
    "test_import_fuzz.py",
    "test_input_bindings.py", "test_connection_sets.py",
    "test_impulse_standardize.py", "test_ir.py", "test_keyed_order.py", "test_lalr_driver.py",
    "test_layers.py", "test_model_packages.py", "test_modes_automaton.py",
    "test_modes_enumeration.py", "test_modes_reference.py", "test_modes_runs.py",
    "test_records.py", "test_reference_models.py", "test_roundtrip.py",
    "test_saved_analysis_format.py", "test_select_model.py", "test_settling.py",
    "test_shared_builds.py",
    "test_startup_imports.py", "test_state_select.py",
    "test_structure_graph.py", "test_structure_latent.py",
    "test_structure_modes.py", "test_structure_sigma.py", "test_structured_import.py",
    "test_tearing.py", "test_terminal_table.py", "test_unit_check.py", "test_value_checks.py",
    "test_xml_eqlist.py",
})


def pytest_ignore_collect(collection_path, config):
    """With ``-m quick`` alone, the other test modules are not even imported (each xdist worker
    would import them all to deselect their tests)."""
    if (config.getoption("markexpr", "") == "quick" and collection_path.suffix == ".py"
            and collection_path.name.startswith("test_")
            and collection_path.name not in QUICK_MODULES):
        return True
    return None


@pytest.hookimpl(tryfirst=True)     # before -m deselects
def pytest_collection_modifyitems(config, items):
    for item in items:
        if (item.path.name in QUICK_MODULES and item.get_closest_marker("slow") is None
                and item.get_closest_marker("long") is None):
            item.add_marker(pytest.mark.quick)


def _sundials_missing():
    from mdae_fmu.fmu.cosim import sundials_missing
    return sundials_missing()


def pytest_runtest_setup(item):
    if item.get_closest_marker("requires_sundials") is None:
        return
    missing = _sundials_missing()
    if missing is None:
        return
    if os.environ.get("MDAE_REQUIRE_SUNDIALS") == "1":
        pytest.fail(f"MDAE_REQUIRE_SUNDIALS=1 but {missing}", pytrace=False)
    pytest.skip(f"{_SUNDIALS_SKIP}: {missing}")


def pytest_terminal_summary(terminalreporter):
    # counted from the reports, so that the banner also appears when pytest-xdist runs the
    # tests in worker processes
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if _SUNDIALS_SKIP in str(getattr(r, "longrepr", ""))]
    if skipped:
        terminalreporter.write_sep(
            "!", f"{len(skipped)} Co-Simulation tests SKIPPED: SUNDIALS CVODE is "
            f"missing ({_sundials_missing()})", red=True, bold=True)


@pytest.fixture(scope="session", autouse=True)
def _shared_fmus():
    """The FMUs built by tests/cosim_util.py live for the whole session (shared between test
    modules); remove them at the end."""
    yield
    import cosim_util
    import fmu_files
    cosim_util.cleanup()
    fmu_files.remove_process_dir()


# ---------------------------------------------------------------------------------------------
# Dask (issue 18). The regress and sweep tests share one cluster of 2 single-threaded THREAD
# workers in the test process (what `--dask` embeds, `mdae_fmu.dask_tasks.client_for`: each FMU
# runs in a child process of its thread), reachable over tcp for the command lines given
# `--scheduler`. Real worker processes (an external cluster's, as `--scheduler` users have) are
# started only by the test that kills one (`dask_process_client`): a cluster of processes costs
# seconds of CPU to start and its workers import the package again (issue 27).
# ---------------------------------------------------------------------------------------------

def _local_client(**cluster_options):
    """A Client on a LocalCluster of 2 single-threaded workers (``cluster_options`` choose
    threads or processes), closed after the session."""
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                       dashboard_address=":0", **cluster_options)
    client = distributed.Client(cluster)
    yield client
    client.close()
    cluster.close()


@pytest.fixture(scope="session")
def dask_client():
    yield from _local_client(processes=False, protocol="tcp", host="127.0.0.1")


@pytest.fixture(scope="session")
def dask_process_client():
    """A LocalCluster of 2 single-threaded worker processes (under nannies, which restart a
    killed worker), started only when a test asks for it."""
    yield from _local_client(processes=True)


@pytest.fixture(scope="session")
def reference_suite_run(dask_client, tmp_path_factory):
    """``regress reference_models/suite.toml`` on the session's thread cluster, once: its result and
    its output folder (index.html, models/*.html, junit.xml)."""
    from pathlib import Path

    from mdae_fmu.regression import regress
    out = tmp_path_factory.mktemp("regress_reference")
    suite = Path(__file__).resolve().parents[1] / "reference_models" / "suite.toml"
    return regress(suite, output_dir=out, client=dask_client), out


@pytest.fixture(scope="session")
def clutch_baselines():
    """The hand-written ClutchBasic FMU (benchmarks/baselines) and its copy with a wrong
    restart at engagement, w1+ = w2+ = w2- (BUG_RESTART_W2), built once per run
    (`fmu_files.baseline_fmu`)."""
    from fmu_files import baseline_fmu
    return (baseline_fmu("ClutchBasic"),
            baseline_fmu("ClutchBasic", "BUG_RESTART_W2", suffix="wrong_restart"))
