"""Sphinx extension: the book's API reference for ``llmmath`` (``book/api/``).

* :data:`LAYERS` is the one list of which module is documented on which page; a page says
  ``.. llmmath-layer:: core`` and gets a section per module (autodoc). A module moved or added
  changes this list only (``tests/display/test_api_reference.py`` refuses a module in no layer).
* Every public callable gets Parameters and Returns written from what the package already
  declares: each parameter's ``@contract`` constraint (``llmmath.core.contracts``: what it accepts,
  word for word as its error message says it), the unit its name carries (``_s`` seconds,
  ``_bytes`` bytes...: CONTRIBUTING's naming rule), and the return annotation. A result record
  (``@checked``) lists its fields the same way. Nothing is typed twice.
* Each callable a lesson uses links to that lesson (read from the lessons' code cells), and a
  lesson's ``pages.source(...)`` block links back: this extension sets
  ``LLMMATH_API_LINKS=1`` for the kernels that run the lessons, and ``llmmath.display.pages.source``
  then adds a ``{py:obj}`` reference under the code.
* A short cross-reference in a docstring (``:class:`DoesNotFitError```) resolves to the one
  documented object of that name, wherever it is defined.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import math
import os
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.ext.autodoc import DataDocumenter
from sphinx.util.docutils import SphinxDirective

from llmmath.core.contracts import MAX_REAL

ROOT = Path(__file__).resolve().parents[2]
#: Read by ``llmmath.display.pages.source`` in the kernels the book build starts.
LINKS_ENV = "LLMMATH_API_LINKS"


@dataclass(frozen=True)
class Layer:
    title: str
    modules: tuple[str, ...]


def _display(package: str, shared: tuple[str, ...]) -> tuple[str, ...]:
    """``package``, its ``shared`` modules, then its others: the chapters' in the book's order
    (``llmmath.display.chapters``, read from _toc.yml), then the sections'. Found in its folder,
    so a new chapter's plots and widgets modules need no line here."""
    from llmmath.display.chapters import chapters

    order = {name: i for i, name in enumerate(chapters())}
    folder = ROOT / "src" / "llmmath" / Path(*package.split("."))
    found = [p.stem for p in folder.glob("*.py") if p.stem[0] != "_" and p.stem not in shared]
    rest = sorted(found, key=lambda name: (order.get(name, len(order)), name))
    return (package, *(f"{package}.{name}" for name in (*shared, *rest)))


def _numbers() -> tuple[str, ...]:
    """``display.numbers``, ``shown``, then each chapter's numbers in the book's order: a module,
    or a package followed by its section modules (found in the folder, as ``_display`` does)."""
    from llmmath.display.chapters import chapters

    folder = ROOT / "src" / "llmmath" / "display" / "numbers"
    names = ["display.numbers", "display.numbers.shown"]
    for chapter in chapters():
        package = folder / chapter
        if (folder / f"{chapter}.py").exists():
            names.append(f"display.numbers.{chapter}")
        elif (package / "__init__.py").exists():
            names.append(f"display.numbers.{chapter}")
            sections = sorted(p.stem for p in package.glob("*.py") if p.stem[0] != "_")
            names += [f"display.numbers.{chapter}.{name}" for name in sections]
    return tuple(names)


#: The addresses released exercises import, one-line re-exports of the core's modules: listed
#: with the chapters (an exercise's reader looks them up), their contents documented where they
#: are defined (``core.serving``, ``core.deployment``, ``core.setting``), which their docstrings
#: link to (#45).
EXERCISE_ADDRESSES = ("serving", "deployment", "setting")


def _chapter_modules() -> tuple[str, ...]:
    """The modules at the package's top: the chapters' (found, so a new one needs no line here),
    then the addresses kept for released exercises."""
    top = (ROOT / "src" / "llmmath").glob("*.py")
    names = sorted(p.stem for p in top if p.stem != "__init__")
    chapters = tuple(name for name in names if name not in EXERCISE_ADDRESSES)
    return (*chapters, *(name for name in EXERCISE_ADDRESSES if name in names))


#: Page (book/api/<name>.rst) -> the modules it documents, in reading order: one page per layer
#: of the package (CONTRIBUTING.md draws them; pyproject.toml's import-linter contracts enforce
#: them). Private modules (``core._checks``...) are documented where they surface (contracts).
LAYERS: dict[str, Layer] = {
    "core": Layer(
        "The shared core",
        (
            "core", "core.units", "core.data", "core.contracts", "core.hardware", "core.racks",
            "core.models", "core.dtypes", "core.roofline", "core.measure", "core.collectives",
            "core.placement", "core.deployment", "core.chip_prices", "core.serving",
            "core.capacity", "core.training", "core.training_memory", "core.hf_config",
            "core.hf_quant", "core.hf_hybrid", "core.expert_dispatch", "core.setting",
        ),
    ),
    "chapters": Layer("The chapters' models", _chapter_modules()),
    "beyond": Layer(
        "Past the floor, and the validation appendix",
        (
            "beyond", "beyond.focus", "beyond.serving_modes", "beyond.paged_kv",
            "beyond.speculative", "beyond.number_formats", "beyond.rack_physics",
            "beyond.moe_balance", "beyond.moe_dispatch", "beyond.serving_systems",
            "beyond.layout_search", "beyond.queueing", "beyond.planning", "beyond.plan_workers",
            "validation", "validation.published",
        ),
    ),
    "figures": Layer(
        "Figures, explorers and pages",
        (
            "display", *_display("display.plots", ("common", "fast_text")),
            *_display("display.widgets", ("common",)), "display.pages", "display.tables",
            "display.chapters",
        ),
    ),
    "numbers": Layer("The lessons' numbers", _numbers()),
    "tools": Layer(
        "The command line",
        (
            "cli", "cli.parse_and_run", "cli.serve_and_fit", "cli.inputs", "cli.search",
            "cli.training", "cli.plan", "cli.calibrate", "cli.formatting",
        ),
    ),
}  # fmt: skip


class LayerDirective(SphinxDirective):
    """``.. llmmath-layer:: <name>``: a section per module of that layer, each autodoc'd."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in LAYERS:
            raise self.error(f"llmmath-layer: no layer {name!r}; known: {sorted(LAYERS)}")
        self.env.note_dependency(__file__)  # a changed extension rewrites the API pages
        lines: list[str] = [
            f"Every number a function accepts is also at most {_plain(MAX_REAL)} "
            "(``llmmath.core.contracts.MAX_REAL``, a bound against overflow): the entries "
            "below leave it out.",
            "",
        ]
        for module in LAYERS[name].modules:
            title = f"llmmath.{module}"
            lines += [title, "-" * len(title), ""]
            lines += [f".. automodule:: {title}", "   :members:", "   :ignore-module-all:"]
            lines += ["   :member-order: bysource", ""]
        self.state_machine.insert_input(StringList(lines, self.env.docname), self.env.docname)
        return []


# ---- what a parameter's name says about its unit (CONTRIBUTING: units in names) -------------
#: Exact names first, then suffixes; the first match wins. A name that matches none shows no
#: unit (a count of layers, a name, a record).
EXACT_UNITS = {
    "batch": "sequences",
    "context": "tokens",
    "contexts": "tokens",
    "tokens": "tokens",
    "flops": "FLOPs",
    "params": "parameters",
    "hours": "hours",
    "gpu_hours": "GPU-hours",
    "gpu_seconds": "GPU-seconds",
    "usd_per_chip_hour": "US dollars per chip-hour",
    "usd_per_gpu_hour": "US dollars per GPU-hour",
    "usd_per_kwh": "US dollars per kWh",
    "usd_per_million": "US dollars per million tokens",
    "megabytes": "megabytes",
}
SUFFIX_UNITS = (
    ("_bytes_per_s", "bytes per second"),
    ("_flop_per_s", "FLOP per second"),
    ("flop_per_s_per_gpu", "FLOP per second per GPU"),
    ("_tokens_per_s_per_chip", "tokens per second per chip"),
    ("_tokens_per_s", "tokens per second"),
    ("_per_s", "per second"),
    ("_usd_per_million", "US dollars per million tokens"),
    ("_usd_per_mtok", "US dollars per million tokens"),
    ("_usd_per_mtok_hour", "US dollars per million tokens per hour"),
    ("_per_chip_hour", "US dollars per chip-hour"),
    ("_usd", "US dollars"),
    ("_bytes_per_param", "bytes per parameter"),
    ("_bytes_per_token", "bytes per token"),
    ("bytes_per_token", "bytes per token"),
    ("_bytes_per_gpu", "bytes per GPU"),
    ("bytes_per_gpu", "bytes per GPU"),
    ("bytes_per_chip", "bytes per chip"),
    ("_bytes", "bytes"),
    ("_flops", "FLOPs"),
    ("_tokens", "tokens"),
    ("_context", "tokens"),
    ("_batch", "sequences"),
    ("_s", "seconds"),
    ("_h", "hours"),
    ("_w", "watts"),
    ("_kg", "kilograms"),
    ("_fraction", "a fraction"),
    ("_share", "a fraction"),
    ("_efficiency", "a fraction"),
    ("mfu", "a fraction"),
)
#: Names whose unit no suffix gives.
PREFIX_UNITS = (("bytes_", "bytes"), ("watts_per_", "watts"), ("n_", "a count"))


def unit_of(name: str) -> str:
    """The unit a name carries, or "" (``decode_s`` -> seconds, ``kv_bytes`` -> bytes)."""
    if name in EXACT_UNITS:
        return EXACT_UNITS[name]
    for suffix, unit in SUFFIX_UNITS:
        if name.endswith(suffix):
            return unit
    for prefix, unit in PREFIX_UNITS:
        if name.startswith(prefix):
            return unit
    return ""


def _escape(text: str) -> str:
    for char in "\\*`|'\"":
        text = text.replace(char, "\\" + char)
    return text


def _plain(number: float) -> str:
    """A bound as a reader writes it: 1,000,000 or 10^30, never 1e+30."""
    if number >= 1e16:
        return (
            f"10^{math.log10(number):.0f}" if math.log10(number).is_integer() else f"{number:.3g}"
        )
    return f"{number:,.0f}" if float(number).is_integer() else f"{number:g}"


E_NOTATION = re.compile(r"\b\d+(?:\.\d+)?e[+-]?\d+\b")


def constraint_text(constraint: Any) -> str:
    """What a contract accepts, in the words of its error message, less the overflow bound
    every number has (said once at the top of each page) and with no e-notation (#45)."""
    kind = getattr(constraint, "kind", "")
    allowed = str(constraint.allowed).replace(f" and <= {MAX_REAL:g}", "")
    text = f"{kind}, {allowed}" if isinstance(kind, str) and kind and "number" in kind else allowed
    text = E_NOTATION.sub(lambda m: _plain(float(m.group())), text)
    return _escape(text)


def parameter_line(name: str, constraint: Any | None, param: inspect.Parameter | None) -> str:
    parts = []
    unit = unit_of(name)
    if unit:
        parts.append(f"**unit:** {unit}.")
    if constraint is not None:
        parts.append(f"**accepts:** {constraint_text(constraint)}.")
    elif param is not None and param.annotation is not inspect.Parameter.empty:
        parts.append(f"``{_annotation(param.annotation)}``.")
    if param is not None and param.default is not inspect.Parameter.empty:
        default = repr(param.default)
        if len(default) < 60 and "<" not in default:
            parts.append(f"Default ``{default}``.")
    label = name if param is None or param.kind != param.VAR_KEYWORD else f"\\*\\*{name}"
    label = label if param is None or param.kind != param.VAR_POSITIONAL else f"\\*{name}"
    return f":param {label}: {' '.join(parts) or 'see above.'}"


def _annotation(annotation: object) -> str:
    text = annotation if isinstance(annotation, str) else inspect.formatannotation(annotation)
    return text.replace("`", "")


NUMERIC = re.compile(r"\b(float|int|ArrayLike|ndarray|NDArray|Array|floating)\b")


def returns_lines(obj: Any, name: str) -> list[str]:
    """``:returns:`` from the return annotation: a record links to its class; a number says
    the unit the function's name carries."""
    try:
        annotation = inspect.signature(obj).return_annotation
    except (TypeError, ValueError):
        return []
    if annotation in (inspect.Signature.empty, None, "None"):
        return []
    text = _annotation(annotation)
    kind = _documented_class(obj, text)
    shown = f":class:`~{kind}`" if kind else f"``{text}``"
    unit = unit_of(name.rsplit(".", 1)[-1]) if NUMERIC.search(text) else ""
    return [f":returns: {shown}" + (f"; **unit:** {unit}." if unit else "")]


def _documented_class(obj: Any, text: str) -> str | None:
    """The dotted name of the llmmath class an annotation names, if it is one."""
    if not re.fullmatch(r"[A-Za-z_][\w.]*", text):
        return None
    scope = getattr(inspect.unwrap(obj), "__globals__", None) or {}
    found: Any = scope.get(text.split(".")[0])
    for part in text.split(".")[1:]:
        found = getattr(found, part, None)
    module = getattr(found, "__module__", "") or ""
    if inspect.isclass(found) and module.startswith("llmmath."):
        return f"{module}.{found.__qualname__}"
    return None


def parameter_lines(obj: Any, what: str) -> list[str]:
    """A ``:param:`` line per parameter: unit, the contract's constraint, default."""
    spec = getattr(obj, "__contract__", None)
    constraints: dict[str, Any] = dict(getattr(spec, "constraints", {}) or {})
    try:
        target = obj if what != "class" else getattr(spec, "kind", obj)
        params = dict(inspect.signature(target).parameters)
    except (TypeError, ValueError):
        params = {}
    lines = []
    for name, param in params.items():
        if name in ("self", "cls"):
            continue
        lines.append(parameter_line(name, constraints.get(name), param))
    return lines


# ---- which lesson uses which function ---------------------------------------------------------
CELL = re.compile(r"^```\{code-cell\}[^\n]*\n(.*?)^```", re.S | re.M)


def _cell_code(cell: str) -> str:
    """A code cell's Python, less its MyST options (``:tags:`` lines or a ``---`` block)."""
    lines = cell.splitlines()
    if lines and lines[0].strip() == "---":
        end = next((i for i, line in enumerate(lines[1:], 1) if line.strip() == "---"), 0)
        lines = lines[end + 1 :]
    lines = [line for line in lines if not line.startswith(":") and not line.startswith("%")]
    return "\n".join(lines)


def _resolve(root: str, attributes: list[str]) -> str | None:
    """The canonical dotted name of ``llmmath.<root>.<attributes...>`` if it is a callable
    or a property the package defines."""
    try:
        found: Any = importlib.import_module(root)
    except ImportError:
        return None
    for attribute in attributes:
        owner, found = found, getattr(found, attribute, None)
        if found is None:
            return None
        if isinstance(owner, type) and isinstance(owner.__dict__.get(attribute), property):
            prop = owner.__dict__[attribute]
            return f"{owner.__module__}.{owner.__qualname__}.{attribute}" if prop.fget else None
    if not callable(found) or not (getattr(found, "__module__", "") or "").startswith("llmmath"):
        return None
    return f"{found.__module__}.{found.__qualname__}"


@cache
def lessons_using() -> dict[str, dict[str, bool]]:
    """Canonical name -> {lesson docname: whether its source is shown there}."""
    used: dict[str, dict[str, bool]] = {}
    for path in sorted((ROOT / "lessons").glob("*.md")):
        doc = f"lessons/{path.stem}"
        code = "\n".join(_cell_code(c) for c in CELL.findall(path.read_text()))
        # The lesson's values, computed for it in its chapter's numbers (a module or a package).
        numbers = ROOT / "src" / "llmmath" / "display" / "numbers"
        for module in [numbers / f"{path.stem}.py", *sorted((numbers / path.stem).glob("*.py"))]:
            if module.exists():
                code += "\n" + module.read_text()
        try:
            tree = ast.parse(code)
        except SyntaxError:
            continue
        aliases: dict[str, str] = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("llmmath"):
                for alias in node.names:  # a module or a name in one: _resolve finds out
                    aliases[alias.asname or alias.name] = f"{node.module}.{alias.name}"
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("llmmath"):
                        aliases[alias.asname or alias.name.split(".")[0]] = (
                            alias.name if alias.asname else "llmmath"
                        )
        shown = _shown_in_source(tree)
        for node in ast.walk(tree):
            chain = _chain(node)
            if not chain or chain[0] not in aliases:
                continue
            dotted = aliases[chain[0]].split(".")
            for cut in range(len(dotted), 0, -1):  # the longest importable module prefix
                name = _resolve(".".join(dotted[:cut]), dotted[cut:] + chain[1:])
                if name:
                    used.setdefault(name, {})
                    used[name][doc] = used[name].get(doc, False) or node in shown
                    break
    return used


def _chain(node: ast.AST) -> list[str]:
    """``a.b.c`` -> ["a", "b", "c"] for a Name or an Attribute on a Name; else []."""
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return [node.id, *reversed(parts)]
    return []


def _shown_in_source(tree: ast.AST) -> set[ast.AST]:
    """The expressions passed to ``pages.source(...)``."""
    shown: set[ast.AST] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and _chain(node.func)[-1:] == ["source"] and node.args:
            shown.add(node.args[0])
    return shown


def lesson_lines(name: str) -> list[str]:
    docs = lessons_using().get(name, {})
    if not docs:
        return []
    links = [
        f":doc:`/{doc}`" + (" (its code is shown there)" if shown else "")
        for doc, shown in sorted(docs.items())
    ]
    return [f":Taught in: {', '.join(links)}"]


# ---- the hook ---------------------------------------------------------------------------------
def add_fields(app: Sphinx, what: str, name: str, obj: Any, options: Any, lines: list[str]) -> None:
    """Append Parameters, Returns and the lessons to each documented callable's docstring."""
    extra: list[str] = []
    if what in ("function", "method", "class"):
        is_record = what == "class" and hasattr(getattr(obj, "__contract__", None), "kind")
        if what != "class" or is_record or _has_own_init(obj):
            extra += parameter_lines(obj, what if is_record else "function")
    if what in ("function", "method"):
        extra += returns_lines(obj, name)
    elif what == "property":
        extra += returns_lines(obj.fget if isinstance(obj, property) else obj, name)
    extra += lesson_lines(name)
    if extra:
        lines += ["", *extra, ""]


def keep_public_callables(
    app: Sphinx, what: str, name: str, obj: Any, skip: bool, options: Any
) -> bool | None:
    """A public function, method or class of the package gets an entry even without a
    docstring: its contract still says what it takes (autodoc alone skips it)."""
    found = getattr(obj, "__func__", obj)
    defined = (getattr(found, "__module__", "") or "").startswith("llmmath.")
    kind = inspect.isfunction(found) or inspect.isclass(found) or hasattr(found, "__contract__")
    return False if skip and not name.startswith("_") and defined and kind else None


def _has_own_init(cls: Any) -> bool:
    return inspect.isclass(cls) and "__init__" in cls.__dict__


def _lookup(dotted: str) -> Any:
    """The object ``dotted`` names (``llmmath.batching.prefill``), or None."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            found: Any = importlib.import_module(".".join(parts[:cut]))
        except ImportError:
            continue
        for part in parts[cut:]:  # a record's field is no class attribute: its dataclass field
            fields = getattr(found, "__dataclass_fields__", {})
            found = inspect.getattr_static(found, part, None) or fields.get(part)
            if found is None:
                return None
        return found
    return None


def _canonical(found: Any, dotted: str) -> str:
    """Where an object is documented: a module by its name, a function or class where it is
    defined (``llmmath.batching.prefill`` -> ``llmmath.core.serving.prefill``), else as named."""
    if inspect.ismodule(found):
        return str(found.__name__)
    found = getattr(found, "__func__", found)  # a classmethod or staticmethod
    if (inspect.isfunction(found) or inspect.isclass(found)) and hasattr(found, "__qualname__"):
        return f"{found.__module__}.{found.__qualname__}"
    return dotted


def resolve_short_reference(app: Sphinx, env: Any, node: Any, contnode: nodes.Node) -> Any:
    """A ``py`` reference Sphinx could not place: one by a re-exported name
    (``llmmath.batching.prefill``) goes to where it is documented; one by a short name
    (``DoesNotFitError``) to the one documented object of that name; one to an object that
    exists but has no entry (a private helper, a constant) shows as text. Anything else stays
    a broken reference, which ``-n -W`` fails."""
    if node.get("refdomain") != "py":
        return None
    from sphinx.util.nodes import make_refnode

    domain = env.get_domain("py")
    target = str(node.get("reftarget", "")).lstrip(".~")
    module, cls = node.get("py:module"), node.get("py:class")
    candidates = [target]
    if module:
        candidates = [f"{module}.{cls}.{target}"] * bool(cls) + [f"{module}.{target}", target]
    for dotted in candidates:
        found = _lookup(dotted) if dotted.startswith("llmmath") else None
        if found is None:
            continue
        name = _canonical(found, dotted)
        entry = domain.objects.get(name)
        if entry is None:
            return contnode
        return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode)
    matches = [full for full in domain.objects if full.endswith("." + target)]
    if len(matches) == 1:
        entry = domain.objects[matches[0]]
        return make_refnode(app.builder, node["refdoc"], entry.docname, entry.node_id, contnode)
    return None


#: A constant's value longer than this is summarized (an array of 5,000 numbers printed whole).
LONGEST_VALUE = 80


def summarize_value(value: Any) -> str | None:
    """A short description of a long constant's value, or None to show it as it is."""
    if len(repr(value)) <= LONGEST_VALUE:
        return None
    size, dtype = getattr(value, "size", None), getattr(value, "dtype", None)
    if size is not None and dtype is not None and size:
        flat = value.ravel()
        return f"array of {size:,} {dtype} from {flat[0]:,.6g} to {flat[-1]:,.6g}"
    if isinstance(value, dict | list | tuple | set | frozenset):
        return f"{type(value).__name__} of {len(value):,} items"
    return f"{type(value).__name__} ({len(repr(value)):,} characters long)"


class SummarizedData(DataDocumenter):  # type: ignore[misc]
    """Module constants as autodoc shows them, but a long value summarized (#45)."""

    priority = DataDocumenter.priority + 1

    def should_suppress_value_header(self) -> bool:
        return bool(super().should_suppress_value_header()) or (
            summarize_value(self.object) is not None
        )

    def add_directive_header(self, sig: str) -> None:
        super().add_directive_header(sig)
        summary = summarize_value(self.object)
        if summary is not None and not self.options.get("no-value"):
            self.add_line(f"   :value: {summary}", self.get_sourcename())


ARRAY_DEFAULT = re.compile(r"array\(\[([^\]]*)\](?:, dtype=\w+)?\)")


def summarize_signature(
    app: Sphinx,
    what: str,
    name: str,
    obj: Any,
    options: Any,
    signature: str | None,
    return_annotation: str | None,
) -> tuple[str | None, str | None] | None:
    """A default that is an array shows as its size, not its 5,000 numbers (#45)."""
    if not signature or "array([" not in signature:
        return None
    short = ARRAY_DEFAULT.sub(
        lambda m: f"<an array of {m.group(1).count(',') + 1:,} values>", signature
    )
    return short, return_annotation


def setup(app: Sphinx) -> dict[str, Any]:
    os.environ[LINKS_ENV] = "1"  # the lesson kernels inherit it (llmmath.display.pages.source)
    app.setup_extension("sphinx.ext.autodoc")
    app.add_directive("llmmath-layer", LayerDirective)
    app.add_autodocumenter(SummarizedData, override=True)
    app.connect("autodoc-process-docstring", add_fields)
    app.connect("autodoc-skip-member", keep_public_callables)
    app.connect("autodoc-process-signature", summarize_signature)
    app.connect("missing-reference", resolve_short_reference)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
