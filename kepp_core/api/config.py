"""The app's configuration schema, in one place: :class:`AppConfig` (what ``kepp app`` /
``kepp demo`` start the app with and what every page reads), the environment variables that
carry it from the command to the pages (:data:`ENV`) and the TOML config file.

``kepp app`` writes its configuration into the environment with :meth:`AppConfig.environment`;
every page of the multipage app reads it back with :meth:`AppConfig.from_env`.

>>> env = AppConfig(dataset="plans", presentation=True).environment()
>>> AppConfig.from_env(env).dataset, AppConfig.from_env(env).presentation
('plans', True)
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, field, fields, replace
from pathlib import Path
from typing import Annotated, Any, ClassVar, Literal

import msgspec
from msgspec import UNSET, UnsetType

from kepp_core.catalog.benchmark import BENCHMARK_DATASETS
from kepp_core.data import LOADERS
from kepp_core.devices import check_device
from kepp_core.errors import KeppError
from kepp_core.catalog import MAX_SEED
from kepp_core.io import MAX_PATH_CHARS, check_under, has_suffix, read_bytes, utf8_text
from kepp_core.llm.client import ENV_URL
from kepp_core.paths import kepp_home
from kepp_core.schema import Meta, Struct, check_nesting, convert
from kepp_core.video.s3d_spec import TORCHSCRIPT_SUFFIXES, S3DSpec, is_s3d

__all__ = ["AppConfig"]

DATASET_FORMATS = tuple(sorted(LOADERS))  # the dataset formats a config may name
BENCHMARKS = tuple(BENCHMARK_DATASETS)  # the benchmarks a dataset may be (their published rows beside the measured)
MAX_CONFIG_BYTES = 2**20  # an app config is a few lines
MAX_CONFIG_DEPTH = 4  # a config nests 2 levels ([app], its encoders list)
ConfigPath = Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS, pattern=r"^[^\x00]+$")]
EncoderSpec = Annotated[str, Meta(min_length=1, max_length=MAX_PATH_CHARS, pattern=r"^[^\x00-\x1f\x7f-\x9f]+$")]
SplitSeed = Annotated[int, Meta(ge=0, le=MAX_SEED)]


def _option(default, env: bool = True, file=None, hint: str = "", path: str = "") -> Any:
    """An app option: its default, whether ``kepp app`` hands it to the pages in an environment variable
    (``KEPP_APP_<NAME>``), its type in a config file (None: not in one), the words a config file's
    error gives for it, and for a path the sidebar's help (what it holds and what leaving it empty means)."""
    return field(default=default, metadata={"env": env, "file": file, "hint": hint, "path": path})


def _path(what: str) -> Any:
    return _option(None, file=ConfigPath, hint="a file or folder path", path=what)


@dataclass(frozen=True)
class AppConfig:
    """Where the app starts and what a page needs to find its data; ``None`` paths mean "the
    default". ``config``, ``port`` and ``address`` concern the server only (``kepp app``). Each field is
    declared once, with how it travels: the environment variables (:data:`ENV`), the config file's
    schema (:class:`ConfigFile`) and the paths (:data:`PATH_KEYS`, the sidebar's text boxes) are derived
    from these declarations."""
    PATH_KEYS: ClassVar[tuple[str, ...]]  # the fields that hold a path (set below, from the declarations)
    PATH_HELP: ClassVar[dict[str, str]]  # what each path holds and what leaving it empty means
    DATASET_FORMATS: ClassVar[tuple[str, ...]] = DATASET_FORMATS  # the dataset formats a config may name
    BENCHMARKS: ClassVar[tuple[str, ...]] = BENCHMARKS  # the benchmark datasets (kepp_core.catalog.benchmark)
    dataset: str = _option("demo", file=Literal[DATASET_FORMATS], hint=f"one of {', '.join(DATASET_FORMATS)}")
    root: str | None = _path("dataset folder or annotation file (empty: the demo world)")
    features: str | None = _path("folder of per-second .npy features (empty: the dataset's own)")
    graph: str | None = _path("P²KG JSON file (empty: built from the training plans)")
    checkpoints: str | None = _path("folder of trained models (empty: the shipped demo models)")
    predictions: str | None = _path("prediction records file or folder (empty: from the checkpoints folder)")
    # the step names of records by themselves (records of no known dataset: kepp_core.data.step_names)
    taxonomy: str | None = _path("step names of the records, JSON or CSV of id -> name (empty: the records' own "
                                 "names, else 'step N'; a dataset's own names win)")
    runs: str | None = _path("folder of training runs with metrics JSONL logs (empty: from the checkpoints folder)")
    # a ``kepp protocol`` output folder, or a folder of them
    protocol: str | None = _path("a 'kepp protocol' output folder or a folder of them (empty: those under runs/)")
    # the benchmark dataset the app's dataset is (crosstask-105, crosstask-133, coin, niv): the published
    # numbers of that dataset are shown apart from the measured ones (no dataset says so itself)
    benchmark: str | None = _option(None, file=Literal[BENCHMARKS], hint=f"one of {', '.join(BENCHMARKS)}")
    split_seed: int = _option(0, env=False, file=SplitSeed, hint=f"a seed 0..{MAX_SEED}")
    presentation: bool = _option(False, file=bool, hint="true or false")
    # encoder specs the person running the app allows for uploads (kepp app --encoder); never
    # set from the browser or a dataset folder
    encoders: tuple[str, ...] = _option((), file=Annotated[list[EncoderSpec], Meta(max_length=64)],
                                        hint="a list of encoder specs")
    # folders whose files a browser visitor may open (kepp app --allow-root); never set from the
    # browser or a config file. The start configuration's own paths and KEPP's cache home are allowed as well.
    allow_roots: tuple[str, ...] = _option(())
    # the LLM endpoints the server may call (kepp app --llm-url, and KEPP_LLM_URL of its environment):
    # the only ones a page may ask, and the only ones the operator's key KEPP_LLM_API_KEY is sent to;
    # never set from the browser or a config file
    llm_urls: tuple[str, ...] = _option(())
    # where the app's networks run (kepp app --device; kepp_core.devices): None is $KEPP_DEVICE, else the GPU
    # where there is one. An encoder spec's own device= goes first for that encoder. Never set from the browser.
    device: str | None = _option(None, file=Annotated[str, Meta(max_length=16)], hint="cpu, cuda or cuda:N")
    config: str | None = _option(None)  # the TOML config file the server started with (its values come first)
    port: int = _option(8501, env=False)
    address: str = _option("localhost", env=False)

    def describe(self) -> str:
        """One line saying what is loaded."""
        root = self.root or "demo world (default)"
        return f"dataset **{self.dataset}** at `{root}`"

    def grounding_encoders(self) -> dict[str, tuple[str, str]]:
        """The S3D encoders among the allowed ones (their text tower grounds steps; the Plan page's
        sidebar offers them): page id (``s3d1``, ``s3d2``, ...) -> ``(spec, label)``.

        >>> AppConfig(encoders=("builtin", "s3d:/w/s3d_howto100m.pth")).grounding_encoders()
        {'s3d1': ('s3d:/w/s3d_howto100m.pth', 'S3D s3d_howto100m.pth')}
        """
        specs = [e for e in self.encoders if is_s3d(e)]
        return {f"s3d{k + 1}": (spec, S3DSpec.parse(spec).label) for k, spec in enumerate(specs)}

    def dataset_key(self) -> tuple:
        """Hashable identity of the configured dataset (a cache key)."""
        return (self.dataset, self.root, self.features, self.split_seed)

    def updated(self, values: Mapping) -> AppConfig:
        """This configuration with the known keys of ``values`` replaced (others ignored).

        >>> AppConfig().updated({"root": "w", "colour": "blue"}).root
        'w'
        """
        names = {f.name for f in fields(AppConfig)}
        clean = {k: v for k, v in values.items() if k in names}
        for key in _LISTS:
            if key in clean:
                clean[key] = tuple(clean[key])
        return replace(self, **clean)

    def allowed_folders(self) -> tuple[Path, ...]:
        """The folders a browser visitor may open paths under, this being the start configuration: those
        the server was started with (``allow_roots``), its own paths (a file's folder for a file) and
        KEPP's cache home (the demo world, its models)."""
        roots = [Path(p) for p in self.allow_roots]
        for key in self.PATH_KEYS:
            value = getattr(self, key)
            if value:
                p = Path(value)
                roots.append(p if p.is_dir() else p.parent)
        roots.append(kepp_home())
        return tuple(Path(os.path.realpath(r)) for r in roots)

    def check_allowed(self, path: str) -> str:
        """``path`` when it lies under one of :meth:`allowed_folders` (symlinks resolved), else a
        KeppError that says the same whether or not the path exists (a visitor learns nothing of
        what lies outside).

        >>> AppConfig(allow_roots=("/srv/data",)).check_allowed("/etc/passwd")
        Traceback (most recent call last):
        ...
        kepp_core.errors.KeppError: /etc/passwd is not under a folder this app server allows; the person running it can allow one with 'kepp app --allow-root DIR'
        """
        check_under(path, self.allowed_folders())
        return path

    @staticmethod
    def read_file(path: str | Path) -> dict:
        """Read an app config file (TOML; keys at top level or under ``[app]``), checked by its schema
        (:class:`ConfigFile`; size and nesting bounded before it is parsed).

        Relative paths are resolved against the file's folder. Unknown keys and wrong types
        raise a KeppError naming the file and the key.

        >>> import tempfile, pathlib
        >>> f = pathlib.Path(tempfile.mkdtemp()) / "app.toml"
        >>> _ = f.write_text('dataset = "plans"\\nroot = "plans.jsonl"\\n')
        >>> cfg = AppConfig.read_file(f); cfg["dataset"], cfg["root"] == str(f.parent / "plans.jsonl")
        ('plans', True)
        """
        import tomllib

        path = Path(path)
        try:
            data = read_bytes(path, MAX_CONFIG_BYTES)
        except FileNotFoundError:
            raise KeppError(f"{path}: config file not found") from None
        check_nesting(data, str(path), MAX_CONFIG_DEPTH, syntax="toml")
        try:
            raw = tomllib.loads(utf8_text(data, str(path)))
        except tomllib.TOMLDecodeError as e:
            raise KeppError(f"{path}: not a valid TOML file ({e})") from None
        except RecursionError:
            raise KeppError(f"{path}: not a config file (nested too deeply to read)") from None
        if isinstance(raw.get("app"), dict):
            if len(raw) > 1:
                raise KeppError(f"{path}: keys both under [app] and outside it (expected one or the other)")
            raw = raw["app"]
        values = msgspec.structs.asdict(convert(raw, ConfigFile, str(path)))
        out: dict = {}
        for key, value in values.items():
            if value is UNSET:
                continue
            if key == "encoders":
                value = [resolve_encoder(v, path.parent) for v in value]
            elif key == "device":
                value = check_device(value, f"{path}: device")
            elif key in PATH_KEYS:
                value = str((path.parent / value) if not Path(value).is_absolute() else Path(value))
            out[key] = value
        return out

    @classmethod
    def from_args(cls, args: argparse.Namespace) -> AppConfig:
        """The configuration of a parsed ``kepp app`` / ``kepp demo`` command line (options left
        out keep their defaults)."""
        return cls().updated({k: v for k, v in vars(args).items() if v is not None})

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> AppConfig:
        """The start configuration: the config file (``KEPP_APP_CONFIG``), then the ``KEPP_APP_*`` variables."""
        environ = os.environ if environ is None else environ
        cfg = cls()
        path = environ.get(ENV["config"])
        if path:
            cfg = cfg.updated(cls.read_file(path))
        values: dict = {}
        for name, var in ENV.items():
            value = environ.get(var)
            if value and name in _LISTS:
                values[name] = tuple(v.strip() for v in value.splitlines() if v.strip())
            elif value and name == "device":
                values[name] = check_device(value.strip(), var)
            elif value and name == "presentation":
                if value not in ("0", "1"):
                    raise KeppError(f"{var}={value[:40]!r}: expected 1 (presentation mode) or 0")
                values[name] = value == "1"
            elif value and name != "config":  # checked as the config file's value of the key is
                values[name] = getattr(convert({name: value}, ConfigFile, var), name)
        if environ.get(ENV_URL, "").strip():  # the operator's own endpoint (its key's)
            values["llm_urls"] = (*values.get("llm_urls", ()), environ[ENV_URL].strip())
        return cfg.updated(values)

    def environment(self) -> dict[str, str]:
        """The ``KEPP_APP_*`` variables that carry this configuration to the app (paths made
        absolute); values equal to the defaults are left out, so a config file's values stand."""
        env: dict[str, str] = {}
        default = AppConfig()
        for name, var in ENV.items():
            value = getattr(self, name)
            if value in (None, False, (), []) or value == getattr(default, name):
                continue
            if name == "encoders":
                env[var] = "\n".join(resolve_encoder(v, Path.cwd()) for v in value)
            elif name == "allow_roots":
                env[var] = "\n".join(str(Path(v).resolve()) for v in value)
            elif name == "llm_urls":
                env[var] = "\n".join(value)
            elif value is True:
                env[var] = "1"
            else:
                env[var] = value if name in ("dataset", "device", "benchmark") else str(Path(value).resolve())
        return env



# Derived from the declarations above: option name -> the environment variable the app reads, the
# fields that hold a path, the list-valued ones.
ENV = {f.name: f"KEPP_APP_{f.name.upper()}" for f in fields(AppConfig) if f.metadata["env"]}
PATH_KEYS = tuple(f.name for f in fields(AppConfig) if f.metadata["path"])
AppConfig.PATH_KEYS = PATH_KEYS
AppConfig.PATH_HELP = {f.name: f.metadata["path"] for f in fields(AppConfig) if f.metadata["path"]}
_LISTS = tuple(f.name for f in fields(AppConfig) if isinstance(f.default, tuple))


# The schema of an app config file (its keys at top level or under ``[app]``): every option with a file
# type, each optional, none other allowed. ``allow_roots`` is not among them: a config file a visitor opens
# from the sidebar never widens what the server allows.
ConfigFile = msgspec.defstruct(
    "ConfigFile", [(f.name, f.metadata["file"] | UnsetType, UNSET) for f in fields(AppConfig) if f.metadata["file"]],
    bases=(Struct,), forbid_unknown_fields=True, module=__name__)
ConfigFile.HINTS = {f.name: f.metadata["hint"] for f in fields(AppConfig) if f.metadata["file"]}


def resolve_encoder(spec: str, base: Path) -> str:
    """A TorchScript spec as an absolute path (relative to ``base``), an S3D spec with its files'
    paths absolute; other specs as they are.

    >>> resolve_encoder("builtin", Path("/x")), resolve_encoder("enc.pt", Path("/x"))
    ('builtin', '/x/enc.pt')
    >>> resolve_encoder("s3d:s3d/s3d_howto100m.pth,batch=8", Path("/x"))
    's3d:/x/s3d/s3d_howto100m.pth,batch=8'
    """
    if is_s3d(spec):
        return S3DSpec.parse(spec).resolved(base).text()
    if has_suffix(spec, *TORCHSCRIPT_SUFFIXES) and not Path(spec).is_absolute():
        return str((base / spec).resolve())
    return spec
