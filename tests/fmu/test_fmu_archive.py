"""FMU extraction with limits (mdae_fmu/fmu_archive.py, issue 25): hostile archives generated
here (a zip bomb small on disk, path traversal, an absolute path, a symbolic link, too many
entries, a truncated file) are refused by every command that reads an FMU (simulate, info,
compare, sweep) with exit 2 and a message naming the FMU and the limit, before anything is
written outside a temporary folder that is always removed."""

from __future__ import annotations

import os
import tempfile
import zipfile
from pathlib import Path

import pytest

import hostile_fmus as H
from mdae_fmu.cli import main
from mdae_fmu.diagnostics import InputError
from mdae_fmu.fmu_archive import ArchiveLimits, extract_fmu, open_fmu

BOMB_SIZE = 64 << 20             # 64 MiB of zeros, about 64 KB deflated

HOSTILE = {
    "zip bomb": (lambda good, out: H.zip_bomb(good, out, BOMB_SIZE),
                 "entry 'resources/zeros.bin' expands 10"),
    "path traversal": (H.path_traversal, "climbs out of the FMU's folder with '..'"),
    "absolute path": (H.absolute_path, "is an absolute path"),
    "symbolic link": (H.symlink, "entry 'resources/link' is a symbolic link"),
    "too many files": (lambda good, out: H.many_files(good, out, 10_001),
                       "more than the 10000 an FMU may hold (limit max_files)"),
    "truncated": (H.truncated, "not an FMU (not a zip archive, or truncated"),
}
LIMIT_NAMED = {"zip bomb": "limit max_ratio", "too many files": "limit max_files"}


@pytest.fixture(scope="module")
def archives(tmp_path_factory):
    """A well-behaved FMU (der(x) = -x) and each hostile archive built from it."""
    d = tmp_path_factory.mktemp("archives")
    good = H.build_fmu(d, "decay")
    return good, {kind: make(good, d / f"{kind.replace(' ', '_')}.fmu")
                  for kind, (make, _) in HOSTILE.items()}


@pytest.fixture
def own_tmp(tmp_path, monkeypatch):
    """The system temporary folder of this test (to see what is left in it)."""
    d = tmp_path / "systmp"
    d.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(d))
    return d


def test_the_bomb_is_small_on_disk(archives):
    good, bad = archives
    assert bad["zip bomb"].stat().st_size < 1 << 20
    with zipfile.ZipFile(bad["zip bomb"]) as z:
        assert z.getinfo("resources/zeros.bin").file_size == BOMB_SIZE


@pytest.mark.parametrize("kind", list(HOSTILE))
@pytest.mark.parametrize("command", ["simulate", "info", "compare", "sweep"])
def test_hostile_archive_exits_2_naming_the_limit(archives, own_tmp, tmp_path, capsys, kind,
                                                  command):
    good, bad = archives
    fmu = bad[kind]
    reference = tmp_path / "ref.csv"
    reference.write_text("time,x\n0,1\n1,0.36787944117144233\n")
    args = {"simulate": ["simulate", str(fmu)], "info": ["info", str(fmu)],
            "compare": ["compare", str(fmu), str(reference)],
            "sweep": ["sweep", str(fmu), "--serial"]}[command]
    rc = main(args)
    err = capsys.readouterr().err
    assert rc == 2, err
    assert err.startswith(f"{fmu}: ") and HOSTILE[kind][1] in err, err
    assert LIMIT_NAMED.get(kind, "") in err and "Traceback" not in err
    assert os.listdir(own_tmp) == []                  # the extraction folder is gone
    assert not (tmp_path / "escaped.txt").exists() and not Path("/tmp/absolute.txt").exists()


def test_total_size_limit_and_what_a_good_fmu_leaves(archives, own_tmp, tmp_path):
    """A legitimately compressed entry above the total limit is refused before a byte is
    written; a good FMU opens, and its folder is gone after the block."""
    good, _ = archives
    big = tmp_path / "big.fmu"
    H.copy_with(good, big, lambda z: z.writestr("resources/data.bin", os.urandom(3 << 20)))
    with pytest.raises(InputError, match=r"expand to more than 2\.0 MiB .*limit "
                                         r"max_total_size"):
        extract_fmu(big, tmp_path / "out", ArchiveLimits(max_total_size=2 << 20))
    assert not (tmp_path / "out").exists() or os.listdir(tmp_path / "out") == []
    with open_fmu(good) as opened:
        assert (opened.directory / "modelDescription.xml").is_file()
        assert opened.model_description.modelName == "Hostile_decay"
        inside = opened.directory
    assert not inside.exists() and os.listdir(own_tmp) == []


def test_a_failed_extraction_leaves_no_folder(archives, own_tmp):
    _, bad = archives
    with pytest.raises(InputError):
        with open_fmu(bad["path traversal"]):
            pass
    assert os.listdir(own_tmp) == []


def test_model_description_with_entities_is_refused(archives, tmp_path, capsys):
    """A DOCTYPE (entities: billion laughs, external files) is never parsed."""
    good, _ = archives
    fmu = tmp_path / "entities.fmu"
    with zipfile.ZipFile(good) as src, zipfile.ZipFile(fmu, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "modelDescription.xml":
                data = data.replace(b"<fmiModelDescription",
                                    b'<!DOCTYPE x [<!ENTITY a "aaaa">]>\n<fmiModelDescription')
            dst.writestr(item, data)
    assert main(["simulate", str(fmu)]) == 2
    assert "declares a DOCTYPE or entities" in capsys.readouterr().err
