"""The ref store: write once, verify on every read, refuse damaged bytes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osiris.core.hashing import sha256_hex
from osiris.errors import IntegrityError, InvalidInputError, NotFoundError
from osiris.store.refs import RefStore
from osiris.store.state import Store
from tests.conftest import run_cli


def test_put_is_idempotent_and_content_addressed(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    ref, created = refs.put(b"hello")
    again, created_again = refs.put(b"hello")
    assert ref == again == "mem://sha256:" + sha256_hex(b"hello")
    assert created and not created_again
    assert refs.get(ref) == b"hello"
    assert list(refs.iter_refs()) == [ref]
    assert not list(refs.path_for(ref).parent.glob(".*.tmp"))


@pytest.mark.parametrize("damage", ["flip", "truncate", "empty"])
def test_damaged_blob_raises_and_never_returns_bytes(tmp_path: Path, damage: str) -> None:
    refs = RefStore(tmp_path)
    ref, _ = refs.put(b"payload " * 100)
    path = refs.path_for(ref)
    data = path.read_bytes()
    path.write_bytes({"flip": b"X" + data[1:], "truncate": data[:50], "empty": b""}[damage])
    with pytest.raises(IntegrityError, match="failed verification"):
        refs.get(ref)


def test_damaged_blob_is_repaired_by_putting_the_same_bytes_again(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    ref, _ = refs.put(b"abc")
    refs.path_for(ref).write_bytes(b"abd")
    assert refs.put(b"abc") == (ref, True)
    assert refs.get(ref) == b"abc"


def test_unknown_and_malformed_refs(tmp_path: Path) -> None:
    refs = RefStore(tmp_path)
    with pytest.raises(NotFoundError):
        refs.get("mem://sha256:" + "0" * 64)
    for bad in ["mem://sha256:../../etc/passwd", "sha256:abc", "mem://sha256:" + "G" * 64]:
        with pytest.raises(InvalidInputError):
            refs.get(bad)


def test_audit_reports_a_tampered_blob(store: Store, osiris_home: Path) -> None:
    ref, _ = store.put_blob(b"important output\n" * 50)
    with store.transaction("t") as tx:
        tx.insert_task("t1", objective="o", state={})
        tx.record_ref(ref, size_bytes=850, tokens=100, encoding="cl100k_base",
                      media_type="text/plain", redaction_version="v", redactions=0)
        tx.link_ref("t1", ref, "observe")
        tx.event("payload.externalize", {"ref": ref}, task_id="t1")
    ok = run_cli("audit", "--task", "t1")
    assert ok.returncode == 0, ok.stdout
    assert json.loads(ok.stdout)["items_verified"] == 1
    store.refs.path_for(ref).write_bytes(b"important output\n" * 49)
    bad = run_cli("audit", "--task", "t1")
    assert bad.returncode == 1
    report = json.loads(bad.stdout)
    assert report["lossless"] is False
    assert report["items_verified"] == 0
    assert "failed verification" in report["integrity_violations"][0]
    store.refs.path_for(ref).unlink()
    gone = json.loads(run_cli("audit", "--task", "t1").stdout)
    assert gone["items_missing"] == 1
