"""The package's shape is held by a test: who may import whom.

- ``core`` imports only ``core`` (pure: no I/O, no asyncio);
- ``transcript`` imports only ``core`` (and itself);
- ``readers`` never import ``live``;
- ``otlp`` (the OTLP view, encoder and sender) imports only ``core`` and ``transcript``: below
  both ``readers`` (``export``) and ``live`` (``run --otlp``), which may import it;
- nothing but ``cli`` imports ``devtools``;
- a layer's ``commands`` package (the CLI's commands beside the code they drive, a module
  each) may also import ``clihelp`` (what the commands share); nothing else but ``cli``
  imports it, and it imports only ``core`` and ``log``: so a command reaches nothing above
  its layer, directly or through what it imports (``run``, in ``live``, no reader);
- ``drive`` (the front-ends that drive an agent: probe) imports live, readers and core, no
  asyncio itself, and nothing but ``cli`` imports it;
- no import cycles between modules, at import time or through a lazy import;
- the conversation model imports no validator (``core.validator*``, ``core.schema``,
  ``core.rules``), directly or through what it imports.
- ``tests/core`` loads nothing above the core (readers, live, drive, devtools), directly,
  through a test helper or through what it imports;
- every rule of the catalog is one ``Rule(...)``, in the validator module whose code flags
  it, with its example (or why it has none).
- no module over 1,000 lines, no class over 600 (split by idea before that), but those
  :data:`OVERSIZED` lists while they are being split.

Imports are read from the source (every ``import`` statement, lazy ones inside functions
too), so a forbidden import fails here before anyone runs it.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).parent.parent / "acp_proxy"

#: What a layer may import besides itself and the standard library / third parties.
ALLOWED = {
    "core": {"core"},
    "transcript": {"core", "transcript"},
    "otlp": {"core", "transcript", "otlp"},
    "readers": {"core", "transcript", "otlp", "readers", "files", "log"},
    "live": {"core", "transcript", "otlp", "live", "files", "log"},
    "devtools": {"core", "transcript", "readers", "devtools", "files", "log"},
    "drive": {"core", "transcript", "readers", "live", "drive", "files", "log"},
    "clihelp": {"core", "log"},
}

#: What a layer's ``commands`` package may import besides what its layer may.
COMMANDS = {"clihelp"}


def is_command_module(module: str) -> bool:
    """Whether ``module`` is in a layer's ``commands`` package (``acp_proxy.readers.commands``,
    ``acp_proxy.readers.commands.stats``)."""
    parts = module.split(".")
    return len(parts) >= 3 and parts[2] == "commands"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imports(path: Path) -> list[tuple[str, bool]]:
    """The acp_proxy modules ``path`` imports, and whether at module level."""
    tree = ast.parse(path.read_text(), str(path))
    top = {id(node) for node in tree.body}
    found: list[tuple[str, bool]] = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level:
            raise AssertionError(f"{path}: relative import (the layers are named in full)")
        for name in names:
            if name == "acp_proxy" or name.startswith("acp_proxy."):
                found.append((name, id(node) in top))
    return found


def graph() -> dict[str, list[tuple[str, bool]]]:
    modules = {module_name(p) for p in PACKAGE.rglob("*.py")}
    edges: dict[str, list[tuple[str, bool]]] = {}
    for path in PACKAGE.rglob("*.py"):
        name = module_name(path)
        # `from acp_proxy.core import framing` names the module acp_proxy.core.framing
        edges[name] = [(target, top) for target, top in imports(path) if target in modules]
    return edges


def layer(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "root"


def violations(edges: dict[str, list[tuple[str, bool]]]) -> list[str]:
    """Every import that breaks a layer rule."""
    found = []
    for module, targets in edges.items():
        here = layer(module)
        for target, _ in targets:
            there = layer(target)
            if there == "devtools" and module != "acp_proxy.cli" and here != "devtools":
                found.append(f"{module} imports {target}: only cli imports devtools")
            elif there == "drive" and module != "acp_proxy.cli" and here != "drive":
                found.append(f"{module} imports {target}: only cli imports drive")
            elif there in COMMANDS and is_command_module(module) and here in ALLOWED:
                continue
            elif there == "clihelp" and module != "acp_proxy.cli":
                found.append(f"{module} imports {target}: only cli and commands import clihelp")
            elif here in ALLOWED and there not in ALLOWED[here] and target != "acp_proxy":
                found.append(
                    f"{module} imports {target}: {here} may import {sorted(ALLOWED[here])}"
                )
    return found


def reaching_above(edges: dict[str, list[tuple[str, bool]]]) -> list[str]:
    """Every command module that reaches a layer above its own, directly or through what it
    imports (lazy imports too): what it may reach is what its layer may import, and
    ``clihelp``."""
    found = []
    for module in sorted(edges):
        if not is_command_module(module):
            continue
        here = layer(module)
        may = ALLOWED[here] | COMMANDS | {here}
        for target in sorted(reached(edges, module)):
            if target != "acp_proxy" and layer(target) not in may:
                found.append(f"{module} reaches {target}: {here} may reach {sorted(may)}")
    return found


def cycles(edges: dict[str, list[tuple[str, bool]]]) -> list[list[str]]:
    """Import cycles among module-level imports."""
    found: list[list[str]] = []
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        stack.append(module)
        for target, top in edges.get(module, []):
            if not top or target == module:
                continue
            if state.get(target) == 1:
                found.append([*stack[stack.index(target) :], target])
            elif target not in state:
                visit(target)
        stack.pop()
        state[module] = 2

    for module in sorted(edges):
        if module not in state:
            visit(module)
    return found


#: What checks ACP: the validator (and its v1 rules), the rule catalog, the schema compiler.
VALIDATING = ("acp_proxy.core.validator", "acp_proxy.core.schema", "acp_proxy.core.rules")


def reached(edges: dict[str, list[tuple[str, bool]]], module: str) -> set[str]:
    """Every module ``module`` imports, directly or through what it imports (lazy imports
    too)."""
    seen: set[str] = set()
    todo = [module]
    while todo:
        for target, _ in edges.get(todo.pop(), []):
            if target not in seen:
                seen.add(target)
                todo.append(target)
    return seen


#: Views that read items and need no validator: loading one loads none of it.
NO_VALIDATOR = (
    "acp_proxy.readers.conversation",
    "acp_proxy.readers.stats",
    "acp_proxy.readers.text",
    "acp_proxy.readers.summary",
    "acp_proxy.transcript.items",
)


@pytest.mark.parametrize("view", NO_VALIDATOR)
def test_the_views_that_read_items_import_no_validator(view):
    """What the user saw, the stats, the timeline need no validator: loading one loads none
    of it (lazy imports included), as the item types live with the one hook protocol."""
    import subprocess
    import sys

    found = reached(graph(), view)
    assert sorted(m for m in found if m.startswith(VALIDATING)) == []
    probe = (
        f"import {view}, sys; print(sorted(m for m in sys.modules if m.startswith({VALIDATING!r})))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "[]"


def test_the_layers_hold():
    assert violations(graph()) == []


def test_no_command_reaches_above_its_layer():
    """``run`` (live) reaches no reader, a reader's command no live shell and no front-end:
    not directly, not through ``clihelp`` nor through what the code it drives imports."""
    assert reaching_above(graph()) == []


def test_the_checker_catches_a_command_reaching_above_its_layer():
    """As ``run`` once did: its size option parsed by a reader, through ``clihelp``."""
    edges = graph()
    edges["acp_proxy.clihelp"] = [*edges["acp_proxy.clihelp"], ("acp_proxy.readers.catalog", False)]
    edges["acp_proxy.readers.commands.stats"] = [("acp_proxy.drive.commands.shared", False)]
    found = reaching_above(edges)
    assert any(
        line.startswith("acp_proxy.live.commands.run reaches acp_proxy.readers.catalog")
        for line in found
    )
    assert any(
        line.startswith("acp_proxy.readers.commands.stats reaches acp_proxy.drive")
        for line in found
    )
    assert any(
        line.startswith("acp_proxy.clihelp imports acp_proxy.readers") for line in violations(edges)
    )


def test_each_command_is_defined_beside_its_code_and_assembled_by_cli():
    """Every command of ``acp-proxy`` is in its layer's ``commands`` package, in a module named
    for it that defines it under that name (``test-agent``: ``test_agent.py``); every module
    there but ``shared`` defines one command, which ``cli`` assembles: none is left out."""
    from acp_proxy.cli import COMMANDS

    defined = {}
    for path in PACKAGE.glob("*/commands/*.py"):
        if path.stem in ("__init__", "shared"):
            continue
        defined[module_name(path)] = path
    assert sorted(COMMANDS.values()) == sorted(defined)
    for name, module in COMMANDS.items():
        assert module.rpartition(".")[2] == name.replace("-", "_"), name
        tree = ast.parse(defined[module].read_text())
        commands = [
            node.name
            for node in tree.body
            if isinstance(node, ast.FunctionDef)
            and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", "") == "command"
                for d in node.decorator_list
            )
        ]
        assert commands == [name.replace("-", "_")], (module, commands)


def test_no_import_cycles():
    assert cycles(graph()) == []


def test_no_import_cycles_even_through_lazy_imports():
    """A lazy import (in a function, or for type checking only) that points back is a cycle
    too: two modules that need each other are one module, or share a third."""
    every = {module: [(target, True) for target, _ in edges] for module, edges in graph().items()}
    assert cycles(every) == []


def test_the_checker_catches_a_forbidden_import():
    """The rules are not vacuous: a core module that imports the live shell, a reader that
    imports live, a module that imports devtools, and a cycle are each caught."""
    edges = graph()
    edges["acp_proxy.core.wire"] = [*edges["acp_proxy.core.wire"], ("acp_proxy.live.relay", True)]
    edges["acp_proxy.readers.stats"] = [("acp_proxy.live.observer", False)]
    edges["acp_proxy.log"] = [("acp_proxy.devtools.bench", False)]
    edges["acp_proxy.core.validator_v2"] = [("acp_proxy.core.rules", True)]  # the other way round
    edges["acp_proxy.readers.text"] = [("acp_proxy.clihelp", False)]  # not a commands module
    assert ("acp_proxy.core.validator_v2", True) in edges["acp_proxy.core.rules"]
    found = violations(edges)
    assert any(
        line.startswith("acp_proxy.core.wire imports acp_proxy.live.relay") for line in found
    )
    assert any(line.startswith("acp_proxy.readers.stats imports acp_proxy.live") for line in found)
    assert any("only cli imports devtools" in line for line in found)
    assert any(
        line.startswith("acp_proxy.readers.text imports acp_proxy.clihelp") for line in found
    )
    assert any(
        {"acp_proxy.core.rules", "acp_proxy.core.validator_v2"} <= set(cycle)
        for cycle in cycles(edges)
    )


def test_drive_is_free_of_asyncio_and_only_cli_imports_it():
    """The front-ends leave the event loop to the client core: no drive module imports
    asyncio; and the checker catches a module other than cli importing drive."""
    for path in (PACKAGE / "drive").rglob("*.py"):
        tree = ast.parse(path.read_text(), str(path))
        names = [
            alias.name
            for node in ast.walk(tree)
            if isinstance(node, ast.Import | ast.ImportFrom)
            for alias in (
                node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")]
            )
        ]
        assert not any(name.split(".")[0] == "asyncio" for name in names), path
    edges = graph()
    edges["acp_proxy.readers.stats"] = [("acp_proxy.drive.probe", False)]
    assert any("only cli imports drive" in line for line in violations(edges))


def test_every_module_is_in_a_layer():
    """The flat package is gone: besides cli (and clihelp, what its commands share), log,
    files and the entry points, every module lives in a layer."""
    top = {module_name(p) for p in PACKAGE.glob("*.py")}
    assert top == {
        "acp_proxy",
        "acp_proxy.__main__",
        "acp_proxy.cli",
        "acp_proxy.clihelp",
        "acp_proxy.log",
        "acp_proxy.files",
    }


def test_the_python_api_is_what_the_package_says():
    """Every public name resolves from ``acp_proxy`` itself (and only those do); importing
    the package loads none of them until asked."""
    import subprocess
    import sys

    import acp_proxy

    for name in acp_proxy.__all__:
        assert getattr(acp_proxy, name) is not None, name
    assert not hasattr(acp_proxy, "Framer")  # internal: not exported
    probe = (
        "import acp_proxy, sys; print(sorted(m for m in sys.modules if m.startswith('acp_proxy.')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True
    )
    assert loaded.stdout.strip() == "['acp_proxy.core', 'acp_proxy.core.version']"


def test_the_packages_module_map_names_every_module_and_only_those():
    """A newcomer finds the file to open from the module map in the package's docstring
    (``Where things are``, what ``help(acp_proxy)`` shows): every module of a layer has its
    line, named as its path (a line may name two: ``log.py, files.py``; or modules beside it,
    in parentheses: ``(validator_v1.py)``, ``(show.py, stats.py)``), and no line names a module
    that is not there."""
    import re
    import textwrap

    import acp_proxy

    text = acp_proxy.__doc__ or ""
    section = text.split("Where things are\n", 1)[1]
    block = textwrap.dedent(section.split("::\n\n", 1)[1].split("\n\n", 1)[0])
    named = set()
    for line in block.strip().splitlines():
        paths, _, what = line.partition("  ")
        names = [name.strip() for name in paths.split(", ")]
        folder = names[0].rpartition("/")[0]
        beside = [
            name
            for group in re.findall(r"\(([^)]*)\)", what)
            for name in re.findall(r"\w+\.py", group)
        ]
        named.update([*names, *(f"{folder}/{name}" if folder else name for name in beside)])
    modules = {
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name not in ("__init__.py", "__main__.py") and path.parent.name != "devtools"
    }
    named_modules = {name for name in named if name.endswith(".py")}
    assert modules - named_modules == set(), "modules without a line in the map"
    assert named_modules - modules == set(), "lines for modules that are gone"
    assert "devtools/" in named


def test_the_readme_stays_at_most_52_kb():
    """The README is for the people who use it: what it is, how to use it, the reference;
    not a notebook, a changelog or design history. It stays within 52 KB (40 until the
    OTLP export and the MCP server each needed a section, 48 until the conformance tables
    covered ten agents and seven clients, each failure with its sentence): a fact is said
    once, in the section a user looks in, and the options' full list is each command's
    --help."""
    from tests.conftest import README

    assert len(README.read_bytes()) <= 52 * 1024


def test_one_hook_protocol_live_and_offline():
    """One ``Addon`` (``transcript/items.py``), for the readers of a recording and the parts
    of a live session alike: no other class of that name, no adapter between two protocols,
    and every addon of the package is one of it."""
    import ast
    import importlib

    from acp_proxy.transcript.items import Addon

    homes = []
    subclasses = []
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if not isinstance(node, ast.ClassDef):
                continue
            if node.name == "Addon":
                homes.append(str(path.relative_to(PACKAGE)))
            bases = {getattr(base, "id", getattr(base, "attr", "")) for base in node.bases}
            if "Addon" in bases:
                subclasses.append((module_name(path), node.name))
            assert node.name != "Readers", f"an adapter between hook protocols: {path}"
    assert homes == ["transcript/items.py"]
    assert len(subclasses) >= 10
    for module, name in subclasses:
        cls = getattr(importlib.import_module(module), name)
        assert issubclass(cls, Addon), f"{module}.{name} is not the one Addon"


#: The streamed-chunk shortcut's own names (``core/chunks.py``, the run's frames as taken).
SHORTCUT_NAMES = {"Shortcut", "TextTemplates", "Envelope", "ChunkRules", "Taken", "takes_runs"}

#: The modules outside ``core`` that know the shortcut: the addon chain and its two drivers,
#: offline (a recording's lines) and live (the wire's).
SHORTCUT_HOMES = {
    "acp_proxy.transcript.items",
    "acp_proxy.readers.annotate",
    "acp_proxy.live.observer",
}


def names_the_shortcut(source: str) -> list[str]:
    """What ``source`` names of the streamed-chunk shortcut: ``core.chunks`` imported, one of
    :data:`SHORTCUT_NAMES` imported, the validator's ``.shortcut``, a run made
    (``Repeated(...)``). A view that reads a run's aggregates (``add_run``) names none."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "acp_proxy.core.chunks":
                found.append("acp_proxy.core.chunks")
            found += [alias.name for alias in node.names if alias.name in SHORTCUT_NAMES]
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name == "acp_proxy.core.chunks"]
        elif isinstance(node, ast.Attribute) and node.attr == "shortcut":
            found.append(".shortcut")
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Repeated":
            found.append("Repeated(...)")
    return found


def test_the_chunk_shortcut_is_known_to_the_chain_and_its_two_drivers_only():
    """The known-chunk speed-up stays behind the addon chain: outside ``core``, at most three
    modules name it (the chain, the offline and the live driver); a view implements ``add``
    and may implement ``add_run``, reading a run's aggregates, nothing of how it was made."""
    knowing = {}
    for path in PACKAGE.rglob("*.py"):
        if layer(module_name(path)) == "core":
            continue
        found = names_the_shortcut(path.read_text(encoding="utf-8"))
        if found:
            knowing[module_name(path)] = sorted(set(found))
    assert set(knowing) <= SHORTCUT_HOMES, knowing
    assert len(knowing) <= 3


@pytest.mark.parametrize(
    "source",
    [
        "from acp_proxy.core.chunks import is_text_chunk\n",
        "import acp_proxy.core.chunks\n",
        "from acp_proxy.transcript.items import Taken\n",
        "def f(v):\n    return v.shortcut.repeat(1)\n",
        "def f(a, b):\n    return Repeated(a, b)\n",
    ],
)
def test_the_checker_catches_a_module_that_names_the_shortcut(source):
    assert names_the_shortcut(source)
    assert not names_the_shortcut("def add_run(self, run):\n    return run.count\n")


# --- tests/core tests the core alone; a rule has one home ---------------------------------

TESTS = Path(__file__).parent


def test_the_tests_mirror_the_package_and_are_a_package():
    """tests/ is importable as a package (``tests.readers.test_diff``), and each of its
    sub-packages tests the package of the same name."""
    assert (TESTS / "__init__.py").is_file()
    subdirs = {p.name for p in TESTS.iterdir() if p.is_dir() and any(p.glob("test_*.py"))}
    packages = {p.parent.name for p in PACKAGE.glob("*/__init__.py")}
    assert subdirs and subdirs <= packages, subdirs - packages
    assert all((TESTS / name / "__init__.py").is_file() for name in subdirs)


#: What tests/core may not load: the layers above the core (the readers' agreement with
#: the validator is tests/readers/test_agreement.py's, once).
ABOVE_CORE = ("readers", "live", "drive", "devtools", "clihelp")


def loads_above_core(
    path: Path, helpers: Path, edges: dict[str, list[tuple[str, bool]]]
) -> list[str]:
    """The modules above the core that ``path`` loads: through its imports (lazy ones too),
    the test helpers it imports from beneath ``helpers`` (``tests.exchanges``), and what
    the acp_proxy modules among them import in turn (``edges``: :func:`graph`)."""
    found: set[str] = set()
    todo, seen = [path], {path}
    while todo:
        tree = ast.parse(todo.pop().read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + [f"{node.module}.{alias.name}" for alias in node.names]
            else:
                continue
            for name in names:
                helper = helpers / f"{name.replace('.', '/')}.py"
                if helper.is_file() and helper not in seen:
                    seen.add(helper)
                    todo.append(helper)
                if name == "acp_proxy" or name.startswith("acp_proxy."):
                    found |= {name, *reached(edges, name)}
    above = {m for m in found if layer(m) in ABOVE_CORE or m == "acp_proxy.cli"}
    return sorted(above)


def test_tests_core_loads_nothing_above_the_core(tmp_path):
    """Every module of tests/core tests the core alone: it imports no reader, live shell,
    front-end or devtool, not directly, not through a test helper, not through an acp_proxy
    module. The check is not vacuous: a helper that imports a reader is caught."""
    edges = graph()
    core_tests = sorted((TESTS / "core").glob("*.py"))
    assert len(core_tests) > 10
    assert {p.name: loads_above_core(p, TESTS.parent, edges) for p in core_tests} == {
        p.name: [] for p in core_tests
    }
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "helper.py").write_text("from acp_proxy.readers.stats import Stats\n")
    (tmp_path / "test_x.py").write_text(
        "from tests import helper\nfrom acp_proxy.core import rules\n"
    )
    assert "acp_proxy.readers.stats" in loads_above_core(tmp_path / "test_x.py", tmp_path, edges)
    (tmp_path / "test_y.py").write_text("from acp_proxy.devtools.demo import DemoClient\n")
    assert "acp_proxy.readers.annotate" in loads_above_core(tmp_path / "test_y.py", tmp_path, edges)


def rule_homes() -> tuple[dict[str, list[str]], dict[str, set[str]]]:
    """Where each rule is defined (a ``Rule("id", ...)`` call), and the modules whose code
    names the id otherwise (its check: a ``_flag("id", ...)``, a table the code reads)."""
    defined: dict[str, list[str]] = {}
    named: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        module = module_name(path)
        tree = ast.parse(path.read_text())
        ids = set()
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Name)
                and node.func.id == "Rule"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
            ):
                defined.setdefault(node.args[0].value, []).append(module)
                ids.add(id(node.args[0]))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and id(node) not in ids
            ):
                named.setdefault(node.value, set()).add(module)
    return defined, named


def test_every_rule_has_one_home_with_its_check_and_its_example():
    """A rule is one ``Rule(...)`` in one module, with its example (or why it has none), and
    that module's code flags it: adding a rule is editing one place, which the catalog,
    ``acp-proxy rules``, the validator and the example-driven tests all read."""
    from acp_proxy.core.rules import CATALOG

    defined, named = rule_homes()
    catalog = {rule.id for rule in CATALOG}
    assert set(defined) == catalog, "a Rule(...) outside the catalog, or a rule without one"
    homes = {rule_id: modules for rule_id, modules in defined.items() if len(modules) != 1}
    assert homes == {}, "a rule defined twice"
    for rule in CATALOG:
        home = defined[rule.id][0]
        assert home.startswith("acp_proxy.core.validator"), (rule.id, home)
        assert home in named.get(rule.id, set()), f"{rule.id}: no check beside it in {home}"
        assert (rule.example is None) != (rule.no_example == ""), rule.id


def test_each_packages_docstring_names_every_module_of_it_and_only_those():
    """``help(acp_proxy.live)`` (and every package's): its ``Modules::`` block has a line for
    each module of the package (``name.py``) and each package in it (``name/``), and none
    for a module that is gone."""
    import ast

    packages = [path.parent for path in PACKAGE.rglob("__init__.py") if path.parent != PACKAGE]
    assert len(packages) >= 10
    for package in packages:
        if not any(package.glob("*.py")) or package.name == "templates":
            continue
        doc = ast.get_docstring(ast.parse((package / "__init__.py").read_text())) or ""
        where = package.relative_to(PACKAGE)
        assert "Modules::\n\n" in doc, f"{where}: no Modules:: block"
        block = doc.split("Modules::\n\n", 1)[1].split("\n\n", 1)[0]
        named = {line.split()[0] for line in block.splitlines() if line.strip()}
        there = {p.name for p in package.glob("*.py") if p.name != "__init__.py"}
        there |= {f"{p.name}/" for p in package.iterdir() if (p / "__init__.py").exists()}
        assert there - named == set(), f"{where}: modules without a line"
        assert named - there == set(), f"{where}: lines for modules that are not there"


def _calls(path: Path) -> set[str]:
    """The names ``path`` calls (``f(...)``, ``x.f(...)``: ``f``)."""
    tree = ast.parse(path.read_text(), str(path))
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            func = node.func
            if isinstance(func, ast.Name):
                found.add(func.id)
            elif isinstance(func, ast.Attribute):
                found.add(func.attr)
    return found


def test_one_assembly_of_a_session():
    """A session (observer, validator, recorder, the chain) is put together in one function,
    ``live/session.py``'s ``assemble``, whatever side acp-proxy plays: nowhere else is an
    ``Observer`` made with the session's chain (``run_addons``), nor a ``session_recorder``
    opened; ``run``, the client core and the server role call ``assemble``."""
    makers = {"run_addons", "session_recorder"}
    home = PACKAGE / "live" / "session.py"
    for path in PACKAGE.rglob("*.py"):
        if path == home or path.name == "observer.py":  # (its default chain is run's)
            continue
        assert not makers & _calls(path), f"{path}: assembles a session of its own"
    for user in ("live/commands/run.py", "live/client.py", "live/server.py"):
        assert "assemble" in _calls(PACKAGE / user), user


def test_one_stdio_shell():
    """The protocol's stdio is read and written by the relay's feeds and sinks (``live/``)
    only: the roles that play the agent (``test-agent``, ``replay``: the server role) have no
    ``select`` loop, no thread reading lines, no framer of their own. (``chat`` reads the
    user's terminal and ``inspect`` serves a page: neither is the protocol's stdio.)"""
    paths = [
        PACKAGE / m for m in ("drive/test_agent/shell.py", "drive/replay.py", "readers/replay.py")
    ]
    for path in paths:
        tree = ast.parse(path.read_text(), str(path))
        modules = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } | {
            (node.module or "").split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
        }
        where = path.relative_to(PACKAGE)
        assert not modules & {"select", "selectors", "threading", "asyncio"}, where
        assert "acp_proxy.core.framing.Framer" not in {n for n, _ in imports(path)}, where
        assert not _calls(path) & {"readline", "select"}, f"{where}: reads stdio itself"


#: The modules outside ``live/`` that read stdin with a thread, a loop or a select of their
#: own, each for a reason that is not the protocol's stdio of a role we play.
OWN_STDIN = {
    # the user's terminal (keys, a paste), not the agent's wire
    "drive/chat/terminal.py": "the user's terminal",
    # another protocol (MCP) on our stdio, served by its own JSON-RPC reader
    "readers/mcp/server.py": "MCP, not ACP",
    # the independent peer the tests and the bench run against: on our relay, a bug of ours
    # would sit on both sides of the wire and hide itself; and it is the plain agent people copy
    "devtools/example_agent.py": "the independent example agent",
    # the bench's own client and agent (measured against a direct pipe)
    "devtools/bench_live.py": "the bench's peers",
}


def _own_stdin_readers() -> set[str]:
    """The modules outside ``live/`` that name stdin and import a thread, ``select`` or
    ``asyncio``: each reads stdio with a loop of its own."""
    found = set()
    for path in PACKAGE.rglob("*.py"):
        where = str(path.relative_to(PACKAGE))
        if where.startswith("live/"):
            continue
        source = path.read_text()
        tree = ast.parse(source, str(path))
        loops = {
            alias.name.split(".")[0]
            for node in ast.walk(tree)
            if isinstance(node, ast.Import)
            for alias in node.names
        } & {"threading", "select", "selectors", "asyncio"}
        stdin = any(
            isinstance(node, ast.Attribute) and node.attr == "stdin" for node in ast.walk(tree)
        )
        if loops and stdin:
            found.add(where)
    return found


def test_no_stdin_loop_outside_live_but_those_said():
    """Outside ``live/`` nothing reads stdin with a loop of its own but the modules of
    :data:`OWN_STDIN`, each for its reason (issue 55: no ``select`` loop, thread reader or
    framer outside ``live/``): a role that plays a side of ACP uses the relay's."""
    assert _own_stdin_readers() == set(OWN_STDIN)


# --- sizes: a module, a class, split by idea before they grow past a reader -------------

#: The most lines a module may have, and a class (issue 55).
MODULE_LINES, CLASS_LINES = 1000, 600

#: What is over the limits today (``path`` for a module, ``path:Class`` for a class, under
#: ``acp_proxy/``), each being split by a branch of its own. The list is exact: once one is
#: split, its line goes (the test says so), and this set ends empty.
OVERSIZED: set[str] = set()


def oversized(root: Path) -> dict[str, int]:
    """Every module beneath ``root`` over :data:`MODULE_LINES` lines (``path``) and every
    class over :data:`CLASS_LINES` (``path:Class``, nested ones too), with its lines."""
    found = {}
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        where = path.relative_to(root).as_posix()
        if (lines := len(source.splitlines())) > MODULE_LINES:
            found[where] = lines
        for node in ast.walk(ast.parse(source, str(path))):
            if isinstance(node, ast.ClassDef):
                size = (node.end_lineno or node.lineno) - node.lineno + 1
                if size > CLASS_LINES:
                    found[f"{where}:{node.name}"] = size
    return found


def test_no_module_over_1000_lines_and_no_class_over_600(tmp_path):
    """No module of the package is over 1,000 lines and no class over 600, but those
    :data:`OVERSIZED` lists, exactly. The check is not vacuous: a module one line over, and a
    class one line over, nested or not, are caught; both at the limit are not."""
    found = oversized(PACKAGE)
    assert set(found) - OVERSIZED == set(), "over the limits: split it by idea"
    assert OVERSIZED - set(found) == set(), "within the limits now: remove it from OVERSIZED"
    statements = "x = 0\n" * MODULE_LINES
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "long.py").write_text(statements + "y = 0\n")
    (tmp_path / "pkg" / "full.py").write_text(statements)
    body = "    x = 0\n" * (CLASS_LINES - 1)
    (tmp_path / "big.py").write_text(f"class Big:\n{body}    y = 0\n")
    (tmp_path / "fits.py").write_text(f"class Fits:\n{body}")
    nested = body.replace("    ", "        ")
    (tmp_path / "inner.py").write_text(f"def f():\n    class Inner:\n{nested}        y = 0\n")
    assert oversized(tmp_path) == {
        "pkg/long.py": MODULE_LINES + 1,
        "big.py:Big": CLASS_LINES + 1,
        "inner.py:Inner": CLASS_LINES + 1,
    }


def _update_set_literals(tree: ast.AST) -> list[tuple[int, frozenset[str]]]:
    """The literal collections of strings (sets, lists, tuples) that spell a set of update
    variants the protocol module names (one of its sets, or four or more of their members)."""
    from acp_proxy.core.protocol import HISTORY_UPDATES, MESSAGE_TEXT_UPDATES, TURN_OUTPUT_UPDATES

    sets = (HISTORY_UPDATES, TURN_OUTPUT_UPDATES, MESSAGE_TEXT_UPDATES)
    every = frozenset().union(*sets)
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Set | ast.List | ast.Tuple):
            continue
        names = frozenset(
            e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)
        )
        if names in sets or (len(names) >= 4 and names <= every):
            found.append((node.lineno, names))
    return found


def test_the_update_sets_have_one_home_in_the_protocol_module():
    """The history updates, a turn's output and the message text updates are defined in
    core/protocol.py only: a front-end imports them, never spells them again."""
    home = PACKAGE / "core" / "protocol.py"
    assert _update_set_literals(ast.parse(home.read_text())), "the protocol module has none"
    spelled = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path in sorted(PACKAGE.rglob("*.py"))
        if path != home
        for line, _ in _update_set_literals(ast.parse(path.read_text()))
    ]
    assert spelled == []


@pytest.mark.parametrize(
    "source",
    [
        'HISTORY = frozenset({"user_message_chunk", "agent_message_chunk", "agent_thought_chunk",'
        ' "tool_call", "tool_call_update", "plan", "user_message", "agent_message",'
        ' "agent_thought"})',
        'if update in ("agent_message_chunk", "agent_thought_chunk", "agent_message",'
        ' "agent_thought"): pass',
    ],
)
def test_the_checker_catches_an_update_set_spelled_again(source):
    assert _update_set_literals(ast.parse(source))


# --- a prompt turn's end: drive/turn.py, as the wire model says ---------------------------------

#: The modules that play the client's side of a session (the front-ends of ``drive/``; the
#: agent's side, ``test_agent``, answers prompts and pairs none), and the client replay of
#: ``readers/replay.py`` (its :class:`ClientReplay` and the key that claims a live frame).
CLIENT_REPLAY = ("ClientReplay", "_key")


def _client_side() -> list[tuple[Path, ast.AST]]:
    """Each module (or part) that plays the client, parsed."""
    drive = PACKAGE / "drive"
    found: list[tuple[Path, ast.AST]] = [
        (path, ast.parse(path.read_text(), str(path)))
        for path in sorted(drive.rglob("*.py"))
        if path.name != "turn.py" and "test_agent" not in path.relative_to(drive).parts
    ]
    replay = PACKAGE / "readers" / "replay.py"
    tree = ast.parse(replay.read_text(), str(replay))
    parts = [
        node
        for node in tree.body
        if isinstance(node, ast.ClassDef | ast.FunctionDef) and node.name in CLIENT_REPLAY
    ]
    assert len(parts) == len(CLIENT_REPLAY), "the client replay moved: say where it is"
    found += [(replay, part) for part in parts]
    return found


def _frame_id(node: ast.AST) -> bool:
    """Whether ``node`` reads a frame's ``id`` member: ``x.get("id")``, ``x["id"]``, or
    ``id_key`` of one."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "id_key":
        return any(_frame_id(arg) for arg in node.args)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        first = node.args[0] if node.args else None
        return node.func.attr == "get" and isinstance(first, ast.Constant) and first.value == "id"
    if isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant) and node.slice.value == "id"
    return False


def pairs_by_frame_id(tree: ast.AST) -> list[int]:
    """The lines that pair a response by its frame's id themselves: a comparison with a
    frame's id, or a key made of one (``id_key(value.get("id"))``)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            if any(_frame_id(side) for side in (node.left, *node.comparators)):
                lines.append(node.lineno)
        elif isinstance(node, ast.Call) and _frame_id(node) and not _frame_id_get(node):
            lines.append(node.lineno)  # id_key(x.get("id")): a key to pair by
    return sorted(set(lines))


def _frame_id_get(node: ast.Call) -> bool:
    """``x.get("id")`` itself (read to answer a request with its id: no pairing)."""
    return isinstance(node.func, ast.Attribute)


def _reads_the_client_core(tree: ast.AST) -> bool:
    """Whether ``tree`` takes the session's frames from the client core itself
    (``client.next_event(...)``, ``self.client.next_events(...)``)."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            owner = node.func.value
            name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
            if node.func.attr in ("next_event", "next_events") and name == "client":
                return True
    return False


def test_a_prompts_response_and_its_turns_end_have_one_home():
    """A prompt's response is paired, and its turn's end and stop reason decided, as the
    wire model says, in one place: ``drive/turn.py`` (``PromptTurn``, ``drive_turn``,
    ``is_reply``), which ``probe``, ``chat`` and ``replay --as client`` use. So, where
    acp-proxy plays the client: no response is paired by reading its frame's id (a
    comparison with ``x.get("id")`` or ``x["id"]``, a key of ``id_key`` of one: the wire
    model's ``message.request``, or ``is_reply``, pairs it); a module that takes the session's
    frames from the client core takes its turns' ends from ``drive/turn.py``; and the
    replay's modules never read a stop reason themselves (no ``stopReason`` there)."""
    paired = [
        f"{path.relative_to(PACKAGE)}:{line}"
        for path, tree in _client_side()
        for line in pairs_by_frame_id(tree)
    ]
    assert paired == [], "pairs a response by its frame's id: use the wire model (is_reply)"
    for path, tree in _client_side():
        if _reads_the_client_core(tree):
            where = path.relative_to(PACKAGE)
            assert "acp_proxy.drive.turn" in {n for n, _ in imports(path)}, where
    for name in ("drive/replay.py", "readers/replay.py"):
        assert "stopReason" not in (PACKAGE / name).read_text(), name


@pytest.mark.parametrize(
    ("source", "found"),
    [
        ('if event.value.get("id") == pending.id: pass', [1]),
        ('key = ("response", id_key(value.get("id")))', [1]),
        ('same = id_key(changed["id"]) != id_key(message.id)', [1]),
        ('request_id = event.value.get("id")', []),  # read to answer it: no pairing
        ("if message.request is not None and message.request.id == pending.id: pass", []),
    ],
)
def test_the_checker_catches_a_response_paired_by_its_frames_id(source, found):
    assert pairs_by_frame_id(ast.parse(source)) == found
