"""The package is lint- and type-clean: ``ruff check mdae_fmu tests benchmarks`` (the package,
its tests and benchmarks) and ``mypy mdae_fmu`` exit 0 with the configuration in pyproject.toml
(both tools come with the ``test`` extra)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _run(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600)


def test_ruff_clean():
    r = _run("ruff", "check", "--no-cache", "mdae_fmu", "tests", "benchmarks")
    assert r.returncode == 0, f"ruff check mdae_fmu tests benchmarks:\n{r.stdout}\n{r.stderr}"


def test_mypy_clean(tmp_path):
    # a fresh cache per run: the result never depends on a stale cache from another checkout
    r = _run("mypy", "--cache-dir", str(tmp_path / "mypy_cache"), "mdae_fmu")
    assert r.returncode == 0, f"mypy mdae_fmu:\n{r.stdout}\n{r.stderr}"
