"""The root command loads its verbs lazily, yet lists and runs every one as before (issue 17)."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest
import typer

from guard.cli.root import VERBS, LazyGroup, VerbStub, app, load_verb


def _help(group: LazyGroup, capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit):
        group.main(["--help"], prog_name="guard")
    return capsys.readouterr().out


def _eager_order() -> list[str]:
    """The verbs in the order Typer lists them when every module is registered up front."""
    holder = typer.Typer()
    done: set[str] = set()
    for name, (module_name, _short) in VERBS.items():
        module = importlib.import_module(module_name)
        if hasattr(module, "register"):
            if module_name not in done:
                module.register(holder)
                done.add(module_name)
        else:
            holder.add_typer(module.app, name=name)
    return list(typer.main.get_group(holder).commands)


@pytest.mark.unit
def test_help_lists_every_verb_with_its_own_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "100")
    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    lazy = _help(group, capsys)
    assert all(isinstance(group.commands[n], VerbStub) for n in VERBS)  # nothing imported
    for name in VERBS:
        assert f"│ {name} " in lazy
    group.load_all()
    assert not any(isinstance(c, VerbStub) for c in group.commands.values())
    assert _help(group, capsys) == lazy  # the table's help is the modules' own, to the byte


@pytest.mark.unit
def test_the_table_matches_the_modules() -> None:
    assert list(VERBS) == _eager_order()
    for name, (_module, short) in VERBS.items():
        real = load_verb(name)
        assert real.name == name
        assert inspect.cleandoc(real.help or "").split("\n\n")[0].strip() == short, name


@pytest.mark.unit
def test_a_verb_runs_after_loading(capsys: pytest.CaptureFixture[str]) -> None:
    group = typer.main.get_command(app)
    with pytest.raises(SystemExit) as exit_:
        group.main(["playbooks", "schema"], prog_name="guard")
    assert exit_.value.code == 0
    assert json.loads(capsys.readouterr().out)["$schema"]
    assert not isinstance(group.commands["playbooks"], VerbStub)  # type: ignore[attr-defined]


def test_version_imports_no_heavy_library() -> None:
    heavy = ["sqlmodel", "sqlalchemy", "pydantic_settings", "docker", "kubernetes", "lancedb"]
    code = (
        "import sys, runpy\n"
        "sys.argv = ['guard', '--version']\n"
        "try:\n"
        "    runpy.run_module('guard.cli', run_name='__main__')\n"
        "except SystemExit:\n"
        "    pass\n"
        f"print(sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    version, imported = proc.stdout.splitlines()
    assert version.startswith("guard ")
    assert imported == "[]"


def test_help_runs_as_a_user_runs_it() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "guard.cli", "--help"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"},
    )
    for name in VERBS:
        assert name in proc.stdout


def test_the_heap_is_frozen_after_every_other_exit_handler() -> None:
    """The interpreter's last collections do not walk the imported modules again (guard.cli):
    a handler registered before ``main`` runs after its freeze and finds the heap frozen."""
    code = (
        "import atexit, gc, sys, runpy\n"
        "atexit.register(lambda: print('frozen', gc.get_freeze_count() > 0))\n"
        "sys.argv = ['guard', '--version']\n"
        "runpy.run_module('guard.cli', run_name='__main__')\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert proc.stdout.splitlines()[-1] == "frozen True"
