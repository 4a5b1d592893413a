"""``kepp talk export``'s worker: ``python app/export_deck.py PLAYLIST OUT [--force]`` writes the offline deck
(:func:`components.talk.deck.export`) of the start configuration the ``KEPP_APP_*`` variables carry (as ``kepp app``
passes them to the server). The deck is drawn by the app's components, so it runs here, beside them; a
user error is one line (``kepp: error: ...``) and status 2, as every ``kepp`` command's."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the app's components

from components.talk import deck  # noqa: E402
from kepp_core.api import AppConfig  # noqa: E402
from kepp_core.errors import KeppError, printable  # noqa: E402


def main(argv: list[str]) -> int:
    """Write the deck (``argv``: PLAYLIST OUT [--force]); the exit status (2: a user error, said in one line)."""
    if len(argv) not in (2, 3) or (len(argv) == 3 and argv[2] != "--force"):
        print("usage: export_deck.py PLAYLIST OUT [--force]", file=sys.stderr)
        return 2
    try:
        out = deck.export(AppConfig.from_env(), argv[0], argv[1], force=len(argv) == 3)
    except KeppError as e:
        print(f"kepp: error: {printable(str(e))}", file=sys.stderr)
        return 2
    except OSError as e:
        if e.filename is None:
            raise
        print(f"kepp: error: {printable(str(e.filename))}: {e.strerror or e}", file=sys.stderr)
        return 2
    print(f"wrote {printable(str(out))}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
