"""Atomic writes: readers never see half a file; a failure leaves the old file untouched."""

from __future__ import annotations

import os
import stat

import pytest

from kepp_core.io import atomic_open, atomic_path, atomic_write_json


def test_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "out.json"
    atomic_write_json(target, {"v": 1})
    with pytest.raises(RuntimeError):
        with atomic_open(target) as f:
            f.write('{"v": 2')
            raise RuntimeError("crash mid-write")
    assert target.read_text().strip().replace(" ", "").replace("\n", "") == '{"v":1}'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]


def test_atomic_path_renames_only_on_success(tmp_path):
    target = tmp_path / "a.bin"
    with pytest.raises(ValueError):
        with atomic_path(target) as tmp:
            tmp.write_bytes(b"partial")
            raise ValueError
    assert not target.exists() and list(tmp_path.iterdir()) == []
    with atomic_path(target) as tmp:
        tmp.write_bytes(b"whole")
    assert target.read_bytes() == b"whole"


def test_written_files_get_normal_permissions(tmp_path):
    mask = os.umask(0o022)
    try:
        import importlib

        import kepp_core.io as kio
        importlib.reload(kio)
        kio.atomic_write_json(tmp_path / "x.json", [1])
        assert stat.S_IMODE((tmp_path / "x.json").stat().st_mode) == 0o644
    finally:
        os.umask(mask)
