"""No import runs up a layer: text/data/layers (and the other modules at the bottom) -> models -> tasks ->
training -> recipes -> export -> kbert_serving -> apps; below them all kbert_core, then kbert_edge (LiteRT's
runner), which import nothing of kbert. Reads the imports with `ast`, every one, also those inside functions."""

import ast
import pathlib
import re

import keras
import pytest

pytestmark = pytest.mark.skipif(keras.config.backend() != "tensorflow", reason="reads source files: one backend")

ROOT = pathlib.Path(__file__).resolve().parent.parent
BOTTOM = ("config", "paths", "malloc_settings", "start_up", "progress", "keywords", "convert", "hf_families",
          "distribution", "saving", "text", "data", "layers", "metrics", "optimizers", "backend_speedups")
# The level of each part: a module may import its own level and those below it.
LEVELS = {"kbert_core": -2, "kbert_edge": -1, **{f"kbert.{name}": 0 for name in BOTTOM}, "kbert.models": 1,
          "kbert.tasks": 2, "kbert.training": 3, "kbert.recipes": 4, "kbert.export": 5, "kbert_serving": 6, "apps": 7}
# export builds on the models and tasks alone (issue 22)
NEVER = {"kbert.export": ("kbert.training", "kbert.recipes")}


def part_of(module):
    """The part ("kbert.models", "apps", ...) of a module's dotted name; None outside kbert."""
    parts = module.split(".")
    if parts[0] in ("kbert_core", "kbert_edge", "kbert_serving", "apps"):
        return parts[0]
    if parts[0] != "kbert":
        return None
    return "kbert" if len(parts) == 1 else f"kbert.{parts[1]}"


def imported_modules(source):
    """The dotted names `source` imports: `from P import N` gives `P.N`, but `kbert` for a name that
    kbert/__init__.py re-exports (`from kbert import save_backbone`); a relative import keeps its dots."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = "." * node.level + (node.module or "")
            for alias in node.names:
                module = f"{base}.{alias.name}"
                yield "kbert" if base == "kbert" and module not in LEVELS else module


def upward_imports(files, facade_level):
    """`(file, imported module, why)` for each import in `files` ({dotted module name: source}) that
    runs up a layer, or names a part of kbert that `LEVELS` does not place."""
    found = []
    for name, source in files.items():
        own = part_of(name)
        for module in imported_modules(source):
            part = part_of(module)
            if module.startswith("."):
                found.append((name, module, "a relative import: name the module"))
            elif part is None or part == own:
                continue
            elif own in ("kbert_core", "kbert_edge") and part.split(".")[0] == "kbert":
                found.append((name, module, f"{own} imports nothing of kbert"))
            elif part != "kbert" and part not in LEVELS:
                found.append((name, module, f"{part} has no place in LEVELS"))
            elif part in NEVER.get(own, ()):
                found.append((name, module, f"{own} never imports {part}"))
            elif (facade_level if part == "kbert" else LEVELS[part]) > LEVELS[own]:
                found.append((name, module, f"{part} is above {own}"))
    return found


def library_files():
    """{dotted module name: source} of kbert (but its `__init__`), kbert_core, kbert_edge, kbert_serving and apps."""
    files = {}
    for package in ("kbert", "kbert_core", "kbert_edge", "kbert_serving", "apps"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")
            files[name] = path.read_text("utf-8")
    return files


def facade_level(files):
    """The level of `kbert`: the highest level among what kbert/__init__.py imports."""
    levels = [LEVELS[part_of(module)] for module in imported_modules(files["kbert"])
              if part_of(module) not in (None, "kbert")]
    return max(levels)


def test_no_import_runs_up_a_layer():
    files = library_files()
    top = facade_level(files)
    assert top == LEVELS["kbert.tasks"]  # kbert re-exports the models and tasks, nothing above them
    del files["kbert"]
    assert upward_imports(files, top) == []


def test_every_part_of_kbert_has_a_level():
    parts = {path.stem if path.is_file() else path.name for path in (ROOT / "kbert").iterdir()
             if (path.suffix == ".py" and path.stem != "__init__") or (path / "__init__.py").is_file()}
    assert {f"kbert.{part}" for part in parts} == {part for part in LEVELS if part.startswith("kbert.")}


@pytest.mark.parametrize("name, source, why", [
    ("kbert.export.loading", "from kbert.training.run_folder import load_run", "kbert.export never imports kbert.training"),
    ("kbert.training.x", "from kbert.export import export_tflite", "kbert.export is above kbert.training"),
    ("kbert.models.x", "def f():\n    import kbert.tasks.bert_task", "kbert.tasks is above kbert.models"),
    ("kbert.tasks.x", "from kbert import training", "kbert.training is above kbert.tasks"),
    ("kbert.text.x", "from kbert.models import BertBackbone", "kbert.models is above kbert.text"),
    ("kbert.training.x", "import apps.app_cli", "apps is above kbert.training"),
    ("kbert.export.x", "from kbert.recipes import ner", "kbert.export never imports kbert.recipes"),
    ("kbert.training.x", "from kbert.recipes import sentence", "kbert.recipes is above kbert.training"),
    ("kbert.models.x", "from kbert import BertClassifier", "kbert is above kbert.models"),
    ("kbert.tasks.x", "from .bert_task import BertTask", "a relative import: name the module"),
    ("kbert_edge.x", "from kbert.text import wordpieces", "kbert_edge imports nothing of kbert"),
    ("kbert_core.x", "from kbert import BertTokenizer", "kbert_core imports nothing of kbert"),
    ("kbert_core.x", "from kbert_edge import EdgeModel", "kbert_edge is above kbert_core"),
    ("kbert.data.x", "from kbert.storage import x", "kbert.storage has no place in LEVELS"),
])
def test_upward_imports_are_found(name, source, why):
    found = upward_imports({name: source}, LEVELS["kbert.tasks"])
    assert [entry[2] for entry in found] == [why]


@pytest.mark.parametrize("name, source", [
    ("kbert.training.x", "from kbert.tasks import BertClassifier\nfrom kbert.saving import load_run\nimport kbert"),
    ("kbert.recipes.x", "from kbert.training import run_backup\nfrom kbert.backend_speedups import active"),
    ("kbert.optimizers.x", "from kbert.backend_speedups.torch_foreach_adamw import foreach_update"),
    ("kbert.data.x", "from kbert.text import BertTokenizer\nfrom kbert_core.windows import word_windows"),
    ("apps.x", "from kbert.export import export_tflite"),
    ("kbert.models.x", "import numpy\nfrom keras import ops"),
])
def test_downward_imports_pass(name, source):
    assert upward_imports({name: source}, LEVELS["kbert.tasks"]) == []


def test_no_module_below_the_apps_names_a_command_line_flag():
    """Issue 41: the library speaks its own level (its arguments), the apps their flags (`--out`, `--restart`)."""
    flag = re.compile(r"(?<![\w-])--[a-z][a-z-]+")
    found = [f"{path.relative_to(ROOT)}:{number}: {line.strip()}" for path in sorted((ROOT / "kbert").rglob("*.py"))
             for number, line in enumerate(path.read_text().splitlines(), 1)
             if flag.search(line) and '"git"' not in line]  # git's own flags, in the model card
    assert found == []
