"""``kepp talk export`` as a speaker runs it, from a talk folder outside the checkout: every path it is given is
read and written there, nothing lands in the checkout, and a file counts as a deck only by the seal the export
alone writes (a note quoting the deck's head or a seal is kept unless ``--force``)."""

from __future__ import annotations

import dataclasses
import hashlib
import shutil
import subprocess

import pytest

from kepp_core.evaluation.playlists import DECK_MARK, DECK_SEAL, PlaylistStore, is_deck, is_deck_pdf, sealed_deck
from kepp_core.paths import REPO_ROOT
from tests.helpers.cli import assert_one_line_error, run_kepp
from tests.helpers.deck import every_kind, records_of, write_playlist


def _checkout_state() -> tuple[str, bytes]:
    """What git sees of the checkout (every file, ignored ones too) and the checkout's own Makefile."""
    status = subprocess.run(["git", "-C", str(REPO_ROOT), "status", "--porcelain", "--untracked-files=all",
                             "--ignored"], capture_output=True, text=True, check=True).stdout
    return "\n".join(line for line in status.splitlines() if "__pycache__" not in line), \
        (REPO_ROOT / "Makefile").read_bytes()


@pytest.fixture
def talk_folder(demo_env, tmp_path):
    """A speaker's folder: ``playlists/talk.json`` (two slides of the demo records) and ``preds.jsonl``."""
    talk = tmp_path / "talk"
    talk.mkdir()
    shutil.copyfile(demo_env.records, talk / "preds.jsonl")
    preds = records_of(dataclasses.replace(demo_env, records=talk / "preds.jsonl"))
    write_playlist(talk / "playlists", "talk", every_kind(preds)[:2])
    return talk


def _export(demo_env, cwd, *args):
    return run_kepp("talk", "export", "playlists/talk.json", "--predictions", "preds.jsonl", "--dataset", "demo",
                    "--root", demo_env.world, "--checkpoints", demo_env.models, *args, cwd=cwd)


@pytest.mark.slow
def test_kepp_talk_export_from_a_talk_folder_reads_and_writes_there_and_never_in_the_checkout(demo_env, talk_folder):
    before = _checkout_state()
    r = _export(demo_env, talk_folder, "--out", "talk.html")
    assert r.returncode == 0, r.stderr[-2000:]
    assert is_deck(talk_folder / "talk.html") and "wrote talk.html" in r.stdout
    assert not (REPO_ROOT / "talk.html").exists()
    # --force over a name the checkout holds too: the talk folder's file is written, the checkout's is untouched
    r = _export(demo_env, talk_folder, "--out", "Makefile", "--force")
    assert r.returncode == 0, r.stderr[-2000:]
    assert is_deck(talk_folder / "Makefile")
    assert _checkout_state() == before
    assert sorted(p.name for p in talk_folder.iterdir()) == ["Makefile", "playlists", "preds.jsonl", "talk.html"]


@pytest.mark.slow
def test_a_note_quoting_the_decks_head_or_a_seal_is_refused_without_force(demo_env, talk_folder):
    digest = hashlib.sha256(b"").hexdigest()
    quoting = {  # each a speaker's note that an older check took for a deck, or a deck no longer whole
        "head.html": f"<!doctype html>\n<html><head>{DECK_MARK}</head><body>my notes</body></html>\n",
        "seal.html": "my notes, ending as a deck would\n" + DECK_SEAL.format(digest=digest),
        "edited.html": sealed_deck(f"<!doctype html>{DECK_MARK}<p>a deck</p>").decode().replace("a deck", "a dock"),
    }
    for name, text in quoting.items():
        (talk_folder / name).write_text(text)
        assert not is_deck(talk_folder / name), name
        r = _export(demo_env, talk_folder, "--out", name)
        assert_one_line_error(r, name, "not a KEPP deck", "--force")
        assert (talk_folder / name).read_text() == text
    # a deck the export wrote is one: replaced without asking, and the new file is sealed too
    (talk_folder / "old.html").write_bytes(sealed_deck(f"<!doctype html>{DECK_MARK}<p>last week's talk</p>"))
    r = _export(demo_env, talk_folder, "--out", "old.html")
    assert r.returncode == 0 and is_deck(talk_folder / "old.html"), r.stderr[-2000:]
    assert "last week" not in (talk_folder / "old.html").read_text()


def test_only_a_regular_file_whose_seal_matches_every_byte_before_it_is_a_deck(tmp_path):
    deck = tmp_path / "deck.html"
    deck.write_bytes(sealed_deck(f"<!doctype html>{DECK_MARK}<p>slides</p>"))
    assert is_deck(deck)
    link = tmp_path / "link.html"
    link.symlink_to(deck)
    assert not is_deck(link)  # a link is never taken for the deck it points at
    data = deck.read_bytes()
    for broken in (data[:-1], data + b"\n", b"x" + data[1:], data[:10]):
        deck.write_bytes(broken)
        assert not is_deck(deck)
    assert not is_deck(tmp_path) and not is_deck(tmp_path / "missing.html")


def test_a_decks_pdf_is_one_only_while_its_seal_matches_the_bytes_the_export_wrote(tmp_path):
    pdf = tmp_path / "talk.pdf"
    printed = b"%PDF-1.7\n1 0 obj <<>> endobj\n%%EOF\n"
    PlaylistStore(tmp_path).write_pdf(pdf, printed)
    assert is_deck_pdf(pdf) and pdf.read_bytes().startswith(printed)
    PlaylistStore(tmp_path).write_pdf(pdf, printed + b"% again\n")  # an earlier deck's PDF is replaced without --force
    data = pdf.read_bytes()
    forged = printed + b"\n%kepp-deck sha256:" + b"0" * 64 + b"\n"  # a PDF quoting a seal it does not match
    for broken in (data[:-1], b"x" + data[1:], data.replace(b"again", b"AGAIN"), forged):
        pdf.write_bytes(broken)
        assert not is_deck_pdf(pdf)
    pdf.write_bytes(forged)
    with pytest.raises(Exception, match="not a KEPP deck's PDF"):
        PlaylistStore(tmp_path).write_pdf(pdf, printed)
    assert pdf.read_bytes() == forged
