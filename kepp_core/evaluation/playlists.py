"""Playlists: named, ordered lists of episodes a speaker curates for a talk, one JSON file per
playlist in a folder (shareable: copy the file). A file is read back only after it is checked
(types, sizes, number of items, the name safe as a file name), so a damaged or hostile file is one
message naming the file and the key, never a traceback or a surprise in the page.

The file ``NAME.json``::

    {"format": "kepp-playlist", "version": 1,
     "items": [{"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3,
                "query": {"video": "0287", "ep": "7", "T": "3", "plan": "1", "model": "graph-R2", "R": "2"},
                "note": ""}]}

``query`` is the address that reopens the item (for the app: the Plan page's URL query, with its
method, T and view settings); ``episode``, ``method`` and ``T`` name it for lists and captions.

An **A/B pair** is an item with ``"versus": "METHOD_B"`` beside its ``method`` (A): one episode planned
by two methods, whose slide shows both plans, the truth and each method's verdict
(:attr:`PlaylistItem.kind` is ``"ab"``; a plain item's is ``"episode"``). A file without ``versus``
keys reads as before, and a plain item is written without one.
The playlist's name is its file's name. Writes are atomic (:mod:`kepp_core.io`), and every change
(add, move, remove, rename) reads and writes the file under its writer lock: two people adding to one
playlist of a shared server at once both land, neither overwrites the other.

>>> import tempfile
>>> store = PlaylistStore(tempfile.mkdtemp())
>>> store.add("my talk", [{"episode": "tea/0287/7:3", "method": "kepp-R2", "T": 3, "query": {"ep": "7"}}]).items[0].T
3
>>> store.names()
['my talk']
>>> check_name("../etc/passwd")
Traceback (most recent call last):
...
kepp_core.errors.KeppError: playlist name '../etc/passwd' has a path separator: a name is letters, digits, spaces, '-', '_' and '.' (up to 64 characters)
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from kepp_core.errors import KeppError
from kepp_core.io import atomic_write_bytes, atomic_write_json, ensure_folder, parse_json, read_text_utf8, writer_lock

__all__ = ["AB", "DECK_MARK", "DECK_SEAL", "EPISODE", "FORMAT", "MAX_ITEMS", "PlaylistItem", "Playlist", "PlaylistStore",
           "check_deck_output", "check_name", "is_deck", "sealed_deck"]

FORMAT, VERSION = "kepp-playlist", 1
SUFFIX = ".json"
MAX_ITEMS = 200  # items in one playlist (a talk shows tens)
MAX_MINUTES = 600  # a talk's length in minutes (the presenter view counts it down)
MAX_BYTES = 256 * 1024  # a playlist file larger than this is not read
MAX_NAME = 64  # characters of a playlist name
MAX_TEXT = 300  # characters of an episode id, a method, a query value
MAX_NOTE = 1000  # characters of an item's note
MAX_QUERY = 24  # keys of an item's query
MAX_LISTED = 500  # playlists listed from one folder
# The generator named in a deck's head (what the page says it is). It does not make a file a deck: any note can
# quote it. What does is the seal the export alone writes as the file's last line (:data:`DECK_SEAL`).
DECK_MARK = '<meta name="generator" content="kepp-deck">'
# A deck's last line: the SHA-256 of every byte before it. A file ending in a seal that matches its own bytes
# was written whole by an export (``kepp talk export``, the Playlists page's Export deck) and may be replaced
# by a new one; any other file is kept unless asked (``--force``). An HTML comment after the page: browsers
# ignore it.
DECK_SEAL = "<!-- kepp-deck sha256:{digest} -->\n"
_SEAL = re.compile(rb"<!-- kepp-deck sha256:([0-9a-f]{64}) -->\n")
SEAL_BYTES = len(DECK_SEAL.format(digest="0" * 64))
# A deck printed to PDF (`kepp talk export --pdf`) is sealed the same way, the seal a PDF comment after the PDF's
# own end (readers skip what follows %%EOF): a later export may replace it without --force, as it replaces an HTML
# deck, and a PDF is one only while its bytes are those the export wrote.
PDF_SEAL = "\n%kepp-deck sha256:{digest}\n"
_PDF_SEAL = re.compile(rb"\n%kepp-deck sha256:([0-9a-f]{64})\n")
PDF_SEAL_BYTES = len(PDF_SEAL.format(digest="0" * 64))
_NAME = re.compile(r"[A-Za-z0-9_-](?:[A-Za-z0-9 _.-]*[A-Za-z0-9_-])?")
_QUERY_KEY = re.compile(r"[A-Za-z][A-Za-z0-9_]{0,31}")
# names Windows reserves for devices: a shared playlist must open there too
_DEVICES = {"con", "prn", "aux", "nul", *(f"{p}{i}" for p in ("com", "lpt") for i in range(1, 10))}
EPISODE, AB = "episode", "ab"  # the kinds of item: one method's episode, two methods' (A/B pair)
_RULE = "a name is letters, digits, spaces, '-', '_' and '.' (up to 64 characters)"


def check_name(name) -> str:
    """``name`` when it is a playlist name that is safe as a file name on every system: ASCII
    letters, digits, spaces, ``-``, ``_`` and ``.``, starting and ending with a letter, digit, ``-``
    or ``_``, at most :data:`MAX_NAME` characters, not a device name; else a KeppError saying why.

    >>> check_name("talk-2026 v2")
    'talk-2026 v2'
    """
    if not isinstance(name, str) or not name.strip():
        raise KeppError(f"a playlist needs a name: {_RULE}")
    shown = name if len(name) <= MAX_NAME else name[:MAX_NAME] + "…"
    if "/" in name or "\\" in name or os.sep in name:
        raise KeppError(f"playlist name {shown!r} has a path separator: {_RULE}")
    if len(name) > MAX_NAME or not _NAME.fullmatch(name) or name.split(".")[0].lower() in _DEVICES:
        raise KeppError(f"playlist name {shown!r} is not allowed: {_RULE}")
    return name


@dataclass(frozen=True)
class PlaylistItem:
    """One episode of a playlist: its id, the method and horizon it is shown with, the query that
    reopens it (string keys and values) and an optional note; ``versus``: method B of an A/B pair
    (``method`` is A), empty for a plain item.

    >>> PlaylistItem("tea/0287/7:3", "kepp-R2", 3, versus="random").kind
    'ab'
    >>> PlaylistItem("tea/0287/7:3", "kepp-R2", 3).to_json()
    {'episode': 'tea/0287/7:3', 'method': 'kepp-R2', 'T': 3, 'query': {}, 'note': ''}
    """
    episode: str
    method: str
    T: int
    query: dict[str, str] = field(default_factory=dict)
    note: str = ""
    versus: str = ""

    @property
    def kind(self) -> str:
        """:data:`AB` for an A/B pair (two methods on one episode), else :data:`EPISODE`."""
        return AB if self.versus else EPISODE

    @property
    def methods(self) -> tuple[str, ...]:
        """The methods the slide shows, A first: one, or two for an A/B pair."""
        return (self.method, self.versus) if self.versus else (self.method,)

    def to_json(self) -> dict:
        """The item as the file holds it (``versus`` only for an A/B pair)."""
        return {"episode": self.episode, "method": self.method, "T": self.T, "query": dict(self.query),
                "note": self.note, **({"versus": self.versus} if self.versus else {})}


@dataclass(frozen=True)
class Playlist:
    """A named, ordered list of :class:`PlaylistItem` (the name is the file's); ``minutes``: the talk's length,
    which the presenter view counts down (None: none set)."""
    name: str
    items: tuple[PlaylistItem, ...] = ()
    minutes: float | None = None

    def moved(self, index: int, delta: int) -> Playlist:
        """The playlist with item ``index`` moved ``delta`` places (kept inside the list).

        >>> p = Playlist("p", tuple(PlaylistItem(f"e{k}", "m", 3) for k in range(3)))
        >>> [i.episode for i in p.moved(2, -1).items], [i.episode for i in p.moved(0, -1).items]
        (['e0', 'e2', 'e1'], ['e0', 'e1', 'e2'])
        """
        items = list(self.items)
        to = min(max(index + delta, 0), len(items) - 1)
        items.insert(to, items.pop(index))
        return replace(self, items=tuple(items))

    def without(self, index: int) -> Playlist:
        """The playlist without item ``index``."""
        return replace(self, items=self.items[:index] + self.items[index + 1:])

    def with_note(self, index: int, note: str, episode: str | None = None) -> Playlist:
        """The playlist with item ``index``'s speaker's note set to ``note`` (checked as a file's note is:
        a string of at most :data:`MAX_NOTE` characters). ``episode``: the item's episode as the editor saw
        it; a KeppError when the item there is another one now (the playlist changed in between).

        >>> p = Playlist("talk", (PlaylistItem("e0", "m", 3), PlaylistItem("e1", "m", 3)))
        >>> p.with_note(1, "the graph's loop", episode="e1").items[1].note
        "the graph's loop"
        >>> p.with_note(1, "x", episode="e0")
        Traceback (most recent call last):
        ...
        kepp_core.errors.KeppError: playlist 'talk': item 2 is e1 now, not e0 (the playlist changed): nothing was written
        """
        if not isinstance(index, int) or not 0 <= index < len(self.items):
            raise KeppError(f"playlist {self.name!r}: no item {index + 1 if isinstance(index, int) else index!r} "
                            f"(it holds {len(self.items)})")
        item = self.items[index]
        if episode is not None and item.episode != episode:
            raise KeppError(f"playlist {self.name!r}: item {index + 1} is {item.episode} now, not {episode} "
                            "(the playlist changed): nothing was written")
        note = _text(note, f"playlist {self.name!r}: item {index + 1}'s note", MAX_NOTE, empty=True)
        items = list(self.items)
        items[index] = replace(item, note=note)
        return replace(self, items=tuple(items))

    def to_json(self) -> dict:
        """The playlist as its file holds it."""
        return {"format": FORMAT, "version": VERSION, "items": [i.to_json() for i in self.items],
                **({"minutes": self.minutes} if self.minutes is not None else {})}


def _text(value, where: str, most: int, empty: bool = False) -> str:
    if not isinstance(value, str):
        raise KeppError(f"{where}: expected a string, got {type(value).__name__}")
    if len(value) > most:
        raise KeppError(f"{where}: longer than {most} characters ({len(value)})")
    if not value and not empty:
        raise KeppError(f"{where}: is empty")
    return value


def _query(value, where: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise KeppError(f"{where}: expected an object of strings, got {type(value).__name__}")
    if len(value) > MAX_QUERY:
        raise KeppError(f"{where}: more than {MAX_QUERY} keys ({len(value)})")
    for key, text in value.items():
        if not _QUERY_KEY.fullmatch(key):
            raise KeppError(f"{where}: key {key[:40]!r} is not a query name (letters, digits, '_')")
        _text(text, f"{where}.{key}", MAX_TEXT, empty=True)
    return dict(value)


def parse_item(value, where: str) -> PlaylistItem:
    """One checked item (a mapping as the file holds it); a KeppError naming ``where`` and the key.

    >>> parse_item({"episode": "e", "method": "m", "T": "3"}, "talk.json: items[0]")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: talk.json: items[0].T: expected a whole number from 1 to 64, got '3'
    >>> parse_item({"episode": "e", "method": "m", "T": 3, "versus": "m"}, "talk.json: items[1]")
    Traceback (most recent call last):
    ...
    kepp_core.errors.KeppError: talk.json: items[1].versus: 'm' is method A too: an A/B pair names two different methods
    """
    if not isinstance(value, Mapping):
        raise KeppError(f"{where}: expected an object, got {type(value).__name__}")
    known = {"episode", "method", "T", "query", "note", "versus"}
    extra = sorted(str(k)[:40] for k in value if k not in known)
    if extra:
        raise KeppError(f"{where}: unknown key {extra[0]!r} (an item has {', '.join(sorted(known))})")
    for key in ("episode", "method", "T"):
        if key not in value:
            raise KeppError(f"{where}: missing {key!r}")
    T = value["T"]
    if isinstance(T, bool) or not isinstance(T, int) or not 1 <= T <= 64:
        raise KeppError(f"{where}.T: expected a whole number from 1 to 64, got {T!r:.40}")
    method = _text(value["method"], f"{where}.method", MAX_TEXT, empty=True)
    versus = _text(value.get("versus", ""), f"{where}.versus", MAX_TEXT, empty=True)
    if versus and not method:
        raise KeppError(f"{where}.versus: an A/B pair needs method A too ('method' is empty)")
    if versus and versus == method:
        raise KeppError(f"{where}.versus: {versus[:40]!r} is method A too: an A/B pair names two different methods")
    return PlaylistItem(episode=_text(value["episode"], f"{where}.episode", MAX_TEXT), method=method, T=T,
                        query=_query(value.get("query", {}), f"{where}.query"),
                        note=_text(value.get("note", ""), f"{where}.note", MAX_NOTE, empty=True), versus=versus)


def parse_playlist(data, name: str, where: str) -> Playlist:
    """A checked :class:`Playlist` named ``name`` from a file's parsed JSON (``where``: the file)."""
    if not isinstance(data, dict):
        raise KeppError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if data.get("format") != FORMAT:
        raise KeppError(f"{where}: 'format' is {str(data.get('format'))[:40]!r}, expected {FORMAT!r} (not a playlist file)")
    if data.get("version") != VERSION:
        raise KeppError(f"{where}: 'version' is {str(data.get('version'))[:20]!r}; this KEPP reads version {VERSION}")
    extra = sorted(str(k)[:40] for k in data if k not in ("format", "version", "items", "minutes"))
    if extra:
        raise KeppError(f"{where}: unknown key {extra[0]!r} (a playlist has format, version, items, minutes)")
    minutes = data.get("minutes")
    if minutes is not None and (isinstance(minutes, bool) or not isinstance(minutes, (int, float))
                                or not 0 < minutes <= MAX_MINUTES):
        raise KeppError(f"{where}: 'minutes' is {str(minutes)[:20]!r}, expected the talk's length in minutes "
                        f"(a number over 0, at most {MAX_MINUTES})")
    items = data.get("items")
    if not isinstance(items, list):
        raise KeppError(f"{where}: 'items' must be a list, got {type(items).__name__}")
    if len(items) > MAX_ITEMS:
        raise KeppError(f"{where}: 'items' holds {len(items)} items, more than a playlist may ({MAX_ITEMS})")
    return Playlist(name, tuple(parse_item(v, f"{where}: items[{k}]") for k, v in enumerate(items)), minutes=minutes)


@dataclass(frozen=True)
class PlaylistStore:
    """The playlists of one folder (``NAME.json`` each). ``check`` is called with every path before
    it is read or written (e.g. a check that it lies under a folder the user allowed); it raises a
    KeppError to refuse. The folder is created on the first write."""
    folder: Path
    check: Callable[[str], object] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "folder", Path(self.folder))

    @property
    def capacity(self) -> int:
        """How many items one playlist may hold (:data:`MAX_ITEMS`)."""
        return MAX_ITEMS

    @property
    def note_limit(self) -> int:
        """How many characters an item's note may hold (:data:`MAX_NOTE`)."""
        return MAX_NOTE

    @property
    def deck_mark(self) -> str:
        """The head every deck of a playlist holds (:data:`DECK_MARK`)."""
        return DECK_MARK

    def write_deck(self, path: str | os.PathLike, html: str, force: bool = False) -> Path:
        """Write a playlist's deck (its ``html``, holding :data:`DECK_MARK`) to ``path`` atomically (a temporary
        file, then a rename), sealed (:func:`sealed_deck`), where :func:`check_deck_output` allows."""
        path = check_deck_output(path, force)
        if DECK_MARK not in html[:4096]:
            raise KeppError(f"{path}: not written: the page is not a KEPP deck")
        atomic_write_bytes(path, sealed_deck(html))
        return path

    def write_pdf(self, path: str | os.PathLike, pdf: bytes, force: bool = False) -> Path:
        """Write a deck printed to PDF (``pdf``) to ``path`` atomically: a new file in an existing folder, an
        earlier PDF, another regular file only with ``force``; never a folder or another non-regular file."""
        path = Path(path)
        if path.exists() or path.is_symlink():
            if not path.is_file() or path.is_symlink():
                raise KeppError(f"{path}: exists and is not a regular file: choose another --out")
            if not force and not is_deck_pdf(path):
                raise KeppError(f"{path}: exists and is not a KEPP deck's PDF: choose another --out, or --force to "
                                "replace it")
        if not path.parent.is_dir():
            raise KeppError(f"{path.parent}: no such folder for the deck")
        if not pdf.startswith(b"%PDF-"):
            raise KeppError(f"{path}: not written: the printed deck is not a PDF")
        atomic_write_bytes(path, pdf + PDF_SEAL.format(digest=hashlib.sha256(pdf).hexdigest()).encode())
        return path

    def path(self, name: str) -> Path:
        """The file of the playlist ``name`` (the name checked first)."""
        path = self.folder / f"{check_name(name)}{SUFFIX}"
        if self.check is not None:
            self.check(str(path))
        return path

    def names(self) -> list[str]:
        """The playlists in the folder, sorted (files whose names are not playlist names are left out)."""
        return self.listing()[0]

    def listing(self) -> tuple[list[str], int]:
        """The playlists' names (at most :data:`MAX_LISTED`) and how many ``.json`` files were left
        out because their names are not playlist names."""
        if self.check is not None:
            self.check(str(self.folder))
        try:
            files = sorted(p.name for p in self.folder.iterdir() if p.suffix == SUFFIX)
        except (FileNotFoundError, NotADirectoryError):
            return [], 0
        except OSError as e:
            raise KeppError(f"{self.folder}: cannot list playlists ({e.strerror or e})") from None
        names = [f[:-len(SUFFIX)] for f in files if _valid(f[:-len(SUFFIX)])]
        return names[:MAX_LISTED], len(files) - len(names)

    def exists(self, name: str) -> bool:
        """Whether the playlist ``name`` has a file."""
        return self.path(name).is_file()

    def read(self, name: str) -> Playlist:
        """The playlist ``name``, checked (:func:`parse_playlist`); a KeppError naming the file and
        key for a file that is missing, too large or malformed."""
        path = self.path(name)
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            raise KeppError(f"{path}: no such playlist") from None
        except OSError as e:
            raise KeppError(f"{path}: cannot read ({e.strerror or e})") from None
        if not path.is_file():
            raise KeppError(f"{path}: is not a file")
        if size > MAX_BYTES:
            raise KeppError(f"{path}: {size} bytes, larger than a playlist file may be ({MAX_BYTES})")
        try:
            text = read_text_utf8(path)
        except OSError as e:
            raise KeppError(f"{path}: cannot read ({e.strerror or e})") from None
        return parse_playlist(parse_json(text, str(path)), name, str(path))

    def write(self, playlist: Playlist) -> Playlist:
        """Write ``playlist`` to its file, atomically (a reader never sees half a file)."""
        path = self.path(playlist.name)
        if len(playlist.items) > MAX_ITEMS:
            raise KeppError(f"playlist {playlist.name!r} would hold {len(playlist.items)} items; at most {MAX_ITEMS}")
        ensure_folder(self.folder)
        atomic_write_json(path, playlist.to_json())
        return playlist

    def edit(self, name: str, change: Callable[[Playlist], Playlist], create: bool = False) -> Playlist:
        """Write ``change(playlist)`` over the playlist ``name``, the file read and written under its
        writer lock (another edit waits: none is lost); ``create``: an empty playlist where there is
        no file yet."""
        with writer_lock(self.path(name), "playlist edit", wait=True):
            playlist = Playlist(check_name(name)) if create and not self.exists(name) else self.read(name)
            return self.write(change(playlist))

    def add(self, name: str, items: Iterable[Mapping | PlaylistItem]) -> Playlist:
        """Append ``items`` (checked as a file's would be) to the playlist ``name``, created when it
        does not exist; an item equal to one already there is not added twice."""
        new = [i if isinstance(i, PlaylistItem) else parse_item(i, f"playlist {name!r}: new item")
               for i in items]

        def append(playlist: Playlist) -> Playlist:
            kept = list(playlist.items)
            for item in new:
                if item not in kept:
                    kept.append(item)
            if len(kept) > MAX_ITEMS:
                raise KeppError(f"playlist {name!r} is full: {MAX_ITEMS} items at most (remove some first)")
            return replace(playlist, items=tuple(kept))

        return self.edit(name, append, create=True)

    def set_note(self, name: str, index: int, note: str, episode: str | None = None) -> Playlist:
        """Write item ``index``'s note of the playlist ``name`` (:meth:`Playlist.with_note`), atomically."""
        return self.write(self.read(name).with_note(index, note, episode))

    def rename(self, old: str, new: str) -> Playlist:
        """Give the playlist ``old`` the name ``new`` (refused when ``new`` exists)."""
        if check_name(old) == check_name(new):
            raise KeppError(f"a playlist named {new!r} exists already: choose another name")
        first, second = sorted((old, new))  # one order for every rename: two renames never wait on each other
        with writer_lock(self.path(first), "playlist edit", wait=True), \
                writer_lock(self.path(second), "playlist edit", wait=True):
            if self.exists(new):
                raise KeppError(f"a playlist named {new!r} exists already: choose another name")
            playlist = self.write(replace(self.read(old), name=new))
            self.delete(old)
        return playlist

    def delete(self, name: str) -> None:
        """Remove the playlist ``name``'s file (a damaged file too)."""
        path = self.path(name)
        try:
            path.unlink()
        except FileNotFoundError:
            raise KeppError(f"{path}: no such playlist") from None
        except OSError as e:
            raise KeppError(f"{path}: cannot delete ({e.strerror or e})") from None


def sealed_deck(html: str) -> bytes:
    """A deck's bytes as an export writes them: ``html`` then its seal (:data:`DECK_SEAL`).

    >>> deck = sealed_deck("<!doctype html><p>hi</p>")
    >>> deck.startswith(b"<!doctype html><p>hi</p><!-- kepp-deck sha256:"), len(deck) - 24 == SEAL_BYTES
    (True, True)
    """
    body = html.encode("utf-8")
    return body + DECK_SEAL.format(digest=hashlib.sha256(body).hexdigest()).encode()


def is_deck_pdf(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a deck's PDF an export wrote: a regular file (not through a link) that begins as a PDF
    and ends in a seal (:data:`PDF_SEAL`) matching the SHA-256 of every byte before it."""
    return _sealed(path, _PDF_SEAL, PDF_SEAL_BYTES, head=b"%PDF-")


def is_deck(path: str | os.PathLike) -> bool:
    """Whether ``path`` is a deck an export wrote: a regular file (not through a link) that ends in a seal
    (:data:`DECK_SEAL`) matching the SHA-256 of every byte before it. Quoting the seal or :data:`DECK_MARK`
    does not make a note a deck; nor does an edited deck stay one. Read in 1 MiB blocks, never blocking."""
    return _sealed(path, _SEAL, SEAL_BYTES)


def _sealed(path: str | os.PathLike, pattern: re.Pattern, size: int, head: bytes = b"") -> bool:
    """Whether ``path`` (a regular file, opened without following a link or blocking) begins with ``head`` and
    its last ``size`` bytes are a seal (``pattern``) holding the SHA-256 of every byte before them."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode) or info.st_size < size + len(head):
        os.close(fd)
        return False
    with os.fdopen(fd, "rb") as f:
        if f.read(len(head)) != head:
            return False
        body = info.st_size - size
        f.seek(body)
        seal = pattern.fullmatch(f.read(size))
        if seal is None:
            return False
        f.seek(0)
        digest = hashlib.sha256()
        while body > 0:
            block = f.read(min(body, 2**20))
            if not block:
                return False
            digest.update(block)
            body -= len(block)
        return digest.hexdigest().encode() == seal.group(1)


def check_deck_output(path: str | os.PathLike, force: bool = False) -> Path:
    """``path`` when a deck may be written there (checked before any work): a new file in an existing folder,
    an earlier deck, another regular file only with ``force``; never a folder or another non-regular file."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        if not path.is_file() or path.is_symlink():
            raise KeppError(f"{path}: exists and is not a regular file: choose another --out")
        if not force and not is_deck(path):
            raise KeppError(f"{path}: exists and is not a KEPP deck: choose another --out, or --force to replace it")
    if not path.parent.is_dir():
        raise KeppError(f"{path.parent}: no such folder for the deck")
    return path


def _valid(name: str) -> bool:
    try:
        check_name(name)
    except KeppError:
        return False
    return True
