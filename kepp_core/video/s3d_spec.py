"""The S3D encoder's spec string and sampling, without torch: what ``s3d:PATH`` means, the name a
feature cache records for it, and how a video becomes the network's input.

A spec is ``s3d:PATH`` (the release's ``s3d_howto100m.pth``), optionally followed by
``,key=value`` options: ``dict=WORDS`` (the word list; default ``s3d_dict.npy`` beside the
weights), ``output=video_embedding|mixed_5c`` (default ``video_embedding``, the 512-d joint
text-video space the released features hold), ``size=N`` (the crop's side, default
:data:`CROP`; the network was trained at 224 and its authors used 200 to 256: another size makes
other features), ``device=cpu|cuda|cuda:N`` (this encoder's device, resolved by
:mod:`kepp_core.devices`; default: the command's ``--device``, else the GPU where there is one) and ``batch=N``
(one-second windows per network call).

**Sampling** (:data:`SAMPLING`, the defaults chosen to match the released CrossTask, COIN and NIV
features; docs, Bring your own, says what is known and what is not verified): frames at
:data:`FPS` frames per second (the frame shown at each ``k / FPS`` s; a video of a lower rate
repeats frames), scaled so that the shorter side is :data:`CROP` pixels and centre-cropped to
``CROP × CROP`` (or ``size``), values ``/ 255`` (no mean or std normalisation); second ``k`` is the window of
the :data:`WINDOW` frames shown during ``[k, k + 1)``, and a last, partial window is padded with
black frames. A video shorter than one window is refused.

>>> spec = S3DSpec.parse("s3d:weights/s3d_howto100m.pth,output=mixed_5c,batch=4")
>>> spec.output, spec.dim, spec.batch, spec.words.as_posix()
('mixed_5c', 1024, 4, 'weights/s3d_dict.npy')
"""

from __future__ import annotations

import functools
import hashlib
import os
from dataclasses import dataclass, replace
from pathlib import Path

from kepp_core.devices import check_device
from kepp_core.errors import KeppError
from kepp_core.io import open_regular, whole_number

PREFIX = "s3d:"
FPS = 16  # frames per second fed to the network
WINDOW = 16  # frames per feature row: one second
CROP = 224  # the centre crop's side (the shorter side is scaled to it first)
OUTPUT_DIMS = {"video_embedding": 512, "mixed_5c": 1024}  # what the network returns for a video, and its width
WORDS_FILE = "s3d_dict.npy"  # the release's word list, beside its weights
OPTIONS = ("dict", "output", "size", "device", "batch")
MIN_SIZE, MAX_SIZE = 32, 1024  # the crop sides a spec may ask for (even)
MAX_BATCH = 4096
# The network's peak memory per byte of its uint8 input (frames, activations, the decoded chunk):
# measured 55-71 MB per 224-px one-second window on the CPU (2.4 MB of frames), rounded up.
PEAK_PER_INPUT_BYTE = 32
MEMORY_BUDGET = 16 * 2**30  # what one batch of windows may take: a workstation's share, a GPU's memory


TORCHSCRIPT_SUFFIXES = (".pt", ".pth", ".ts")  # an encoder spec ending so names a TorchScript file


def is_s3d(spec: object) -> bool:
    """Whether an encoder spec names the S3D encoder."""
    return isinstance(spec, str) and spec.startswith(PREFIX)


@dataclass(frozen=True)
class S3DSpec:
    """A parsed ``s3d:PATH[,key=value...]`` encoder spec (module docstring)."""

    weights: Path
    dictionary: Path | None = None
    output: str = "video_embedding"
    size: int = CROP
    device: str | None = None
    batch: int | None = None

    @classmethod
    def parse(cls, spec: str) -> S3DSpec:
        """Read a spec string (KeppError naming the option or value that is wrong)."""
        if not is_s3d(spec):
            raise KeppError(f"encoder {spec!r} is not an S3D spec (s3d:PATH[,dict=WORDS][,output=...])")
        parts = spec[len(PREFIX):].split(",")
        options: dict[str, str] = {}
        while len(parts) > 1 and parts[-1].partition("=")[0] in OPTIONS and "=" in parts[-1]:
            key, _, value = parts.pop().partition("=")
            if key in options:
                raise KeppError(f"encoder {spec!r}: option {key!r} given twice")
            options[key] = value
        path = ",".join(parts)
        if not path:
            raise KeppError(f"encoder {spec!r}: expected s3d:PATH, the S3D weights file (s3d_howto100m.pth)")
        if "=" in parts[-1] and parts[-1].partition("=")[0].isidentifier() and len(parts) > 1:
            raise KeppError(f"encoder {spec!r}: unknown option {parts[-1].partition('=')[0]!r} "
                            f"(expected {', '.join(OPTIONS)})")
        output = options.get("output", "video_embedding")
        if output not in OUTPUT_DIMS:
            raise KeppError(f"encoder {spec!r}: output={output!r}, expected one of {', '.join(OUTPUT_DIMS)}")
        size = options.get("size", str(CROP))
        if whole_number(size, 6) is None or not MIN_SIZE <= int(size) <= MAX_SIZE or int(size) % 2:
            raise KeppError(f"encoder {spec!r}: size={size!r}, expected an even number of pixels from "
                            f"{MIN_SIZE} to {MAX_SIZE}")
        batch = options.get("batch")
        if batch is not None and (whole_number(batch, 6) is None or not 1 <= int(batch) <= MAX_BATCH):
            raise KeppError(f"encoder {spec!r}: batch={batch!r}, expected a whole number from 1 to {MAX_BATCH}")
        if batch is not None and batch_bytes(int(batch), int(size)) > MEMORY_BUDGET:
            most = max(1, MEMORY_BUDGET // batch_bytes(1, int(size)))
            raise KeppError(f"encoder {spec!r}: batch={batch} windows of {WINDOW} frames at {size} px need about "
                            f"{batch_bytes(int(batch), int(size)) / 2**30:,.1f} GiB (at most {MEMORY_BUDGET / 2**30:g} "
                            f"GiB); use batch={most} or less at this size")
        device = options.get("device") or None
        if device is not None:
            device = check_device(device, f"encoder {spec!r}: device=")
        words = options.get("dict")
        return cls(Path(os.path.expanduser(path)), Path(os.path.expanduser(words)) if words else None, output,
                   int(size), device, int(batch) if batch is not None else None)

    def text(self) -> str:
        """The spec as a string (options only where they differ from the defaults).

        >>> S3DSpec.parse("s3d:/w/s.pth,batch=8").text()
        's3d:/w/s.pth,batch=8'
        """
        opts = [("dict", self.dictionary), ("output", None if self.output == "video_embedding" else self.output),
                ("size", None if self.size == CROP else self.size), ("device", self.device), ("batch", self.batch)]
        return PREFIX + str(self.weights) + "".join(f",{k}={v}" for k, v in opts if v is not None)

    def on(self, device: str | None) -> S3DSpec:
        """The spec with ``device`` where it names none (its own ``device=`` goes first).

        >>> S3DSpec.parse("s3d:w.pth").on("cuda:1").device, S3DSpec.parse("s3d:w.pth,device=cpu").on("cuda").device
        ('cuda:1', 'cpu')
        """
        if self.device is not None or device is None:
            return self
        return replace(self, device=check_device(device))

    def resolved(self, base: Path) -> S3DSpec:
        """The spec with relative weight and word-list paths made absolute against ``base``.

        >>> S3DSpec.parse("s3d:w/s.pth,dict=d.npy").resolved(Path("/x")).text()
        's3d:/x/w/s.pth,dict=/x/d.npy'
        """
        def absolute(p: Path | None) -> Path | None:
            return None if p is None or p.is_absolute() else (Path(base) / p)
        return replace(self, weights=absolute(self.weights) or self.weights,
                       dictionary=absolute(self.dictionary) or self.dictionary)

    @property
    def label(self) -> str:
        """A short readable name: ``S3D s3d_howto100m.pth`` (and the output and crop where not the defaults)."""
        extra = [x for x in (None if self.output == "video_embedding" else self.output,
                             None if self.size == CROP else f"{self.size} px") if x]
        return f"S3D {self.weights.name}" + (f" ({', '.join(extra)})" if extra else "")

    @property
    def dim(self) -> int:
        """The width of the features (512 for ``video_embedding``, 1024 for ``mixed_5c``)."""
        return OUTPUT_DIMS[self.output]

    @property
    def sampling(self) -> str:
        """The sampling in a few characters (``16fps-16f-224px``), part of the recorded name."""
        return f"{FPS}fps-{WINDOW}f-{self.size}px"

    @property
    def words(self) -> Path:
        """The word list: ``dict=``, else ``s3d_dict.npy`` beside the weights."""
        return words_path(self.weights, self.dictionary)

    @property
    def name(self) -> str:
        """The name a feature cache records (``features.json``): the output, the sampling and the
        weights file's name and content digest (the word list, device and batch do not change
        the features). Computing it reads the weights file (a missing one is a KeppError)."""
        return f"s3d:{self.output}:{self.sampling}:{self.weights.name}@{file_digest(self.weights)}"


    @property
    def text_tower(self) -> str:
        """What the text tower's scores depend on: the weights' and the word list's names and content
        digests (a decoding choice made with its distributions is made again when either changes). A
        missing file is a KeppError naming it."""
        words = existing_words(self.words)
        return f"{self.weights.name}@{file_digest(self.weights)}+{words.name}@{file_digest(words)}"


def batch_bytes(batch: int, size: int) -> int:
    """About the memory the network takes for ``batch`` one-second windows at a ``size``-px crop
    (:data:`PEAK_PER_INPUT_BYTE` per byte of their frames).

    >>> round(batch_bytes(1, 224) / 2**20)
    74
    """
    return batch * WINDOW * size * size * 3 * PEAK_PER_INPUT_BYTE


def check_text_features(spec: S3DSpec, name: str | None, where: str) -> None:
    """KeppError unless features a cache names ``name`` (its ``features.json`` encoder) are the
    ``video_embedding`` of the network of ``spec``'s weights (any crop size): the space its text
    tower scores in."""
    digest = spec.name.rsplit("@", 1)[1]
    if not (name and name.startswith(f"{PREFIX}video_embedding:") and name.endswith(f"@{digest}")):
        raise KeppError(f"{where}: the features were made by encoder {name or 'unknown (no features.json)'}, "
                        f"but text grounding with {spec.weights.name} needs its video_embedding features: "
                        f"extract them with 'kepp features extract --encoder s3d:{spec.weights} --force'")


def words_path(weights: str | os.PathLike, dictionary: str | os.PathLike | None = None) -> Path:
    """The word list of a weights file: ``dictionary``, else ``s3d_dict.npy`` beside the weights."""
    return Path(dictionary) if dictionary is not None else Path(weights).parent / WORDS_FILE


def existing_words(path: str | os.PathLike) -> Path:
    """``path``, a word list that exists (a KeppError naming it otherwise)."""
    path = Path(path)
    if not path.exists():  # a FIFO or a folder exists: its reader names what it is
        raise KeppError(f"{path}: S3D word list not found (the release's {WORDS_FILE}, beside the weights "
                        "or named with dict=PATH)")
    return path


def file_digest(path: Path) -> str:
    """The first 12 hex digits of a file's SHA-1 (remembered per path, size and modification time)."""
    path = Path(path)
    if not path.exists():
        raise KeppError(f"{path}: S3D weights file not found (the release's s3d_howto100m.pth)")
    st = path.stat()
    return _digest(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=32)
def _digest(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha1()
    with open_regular(path) as f:  # a FIFO or a device is refused, never read
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()[:12]


def decode_size(width: int, height: int, crop: int = CROP) -> tuple[int, int]:
    """The ``(width, height)`` a ``width × height`` video is decoded at: the shorter side scaled to
    ``crop`` (the centre crop is then ``crop × crop``).

    >>> decode_size(640, 360), decode_size(360, 640), decode_size(100, 100, 32)
    ((398, 224), (224, 398), (32, 32))
    """
    scale = crop / min(width, height)
    return max(crop, round(width * scale)), max(crop, round(height * scale))
