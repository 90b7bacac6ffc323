"""`codeflux completion bash|zsh|fish`: the scripts come from the parser and load in the real shells."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from codeflux.cli.completion import command_tree
from codeflux.cli.main import build_parser, main


def _script(shell: str, capsys: pytest.CaptureFixture[str]) -> str:
    assert main(["completion", shell]) == 0
    return capsys.readouterr().out


def test_the_bash_script_registers_and_completes_commands_verbs_options_and_choices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    script = tmp_path / "codeflux.bash"
    script.write_text(_script("bash", capsys))
    probe = """source "$1"
complete -p codeflux
offered() { COMP_WORDS=("$@"); COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _codeflux_complete; echo "${COMPREPLY[*]}"; }
offered codeflux ta
offered codeflux task li
offered codeflux --data-dir /some/where task sh
offered codeflux task list --l
offered codeflux run --provider open
offered codeflux completion z
offered codeflux zz
"""
    ran = subprocess.run(["bash", "--norc", "--noprofile", "-c", probe, "probe", str(script)], capture_output=True,
                         text=True, timeout=30, check=False)
    assert ran.returncode == 0 and ran.stderr == "", ran
    assert ran.stdout.splitlines() == [
        "complete -o default -F _codeflux_complete codeflux",
        "task",
        "list",
        "show",  # after a global option and its value
        "--limit",
        "openai openai-compatible",
        "zsh",
        "",  # the control: nothing is offered for a word no command starts with
    ]


def test_every_command_and_verb_of_the_parser_is_in_every_script(capsys: pytest.CaptureFixture[str]) -> None:
    tree = command_tree(build_parser())
    assert {"task", "run", "completion", "integrity-check"} <= set(tree.children)
    assert {"list", "show"} <= set(tree.children["task"].children)
    for shell in ("bash", "zsh", "fish"):
        text = _script(shell, capsys)
        for path, _ in tree.walk():
            for word in path:
                assert word in text, (shell, path)
        assert "--debug" not in tree.children["task"].flags  # a hidden option is never offered


@pytest.mark.skipif(shutil.which("zsh") is None or shutil.which("fish") is None, reason="zsh or fish not installed")
def test_the_zsh_and_fish_scripts_load_in_those_shells(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    zsh_script, fish_script = tmp_path / "codeflux.zsh", tmp_path / "codeflux.fish"
    zsh_script.write_text(_script("zsh", capsys))
    fish_script.write_text(_script("fish", capsys))
    zsh = subprocess.run(["zsh", "-f", "-c", 'autoload -U compinit; compinit -u -d "$2"; source "$1"; '
                          'print -r -- "$_comps[codeflux]"', "probe", str(zsh_script), str(tmp_path / "zcompdump")],
                         capture_output=True, text=True, timeout=30, check=False)
    assert (zsh.returncode, zsh.stdout, zsh.stderr) == (0, "_codeflux\n", ""), zsh
    fish = subprocess.run(["fish", "--no-config", "-c", 'source $argv[1]; complete -C"codeflux task li"',
                           str(fish_script)], capture_output=True, text=True, timeout=30, check=False,
                          env={"HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert fish.returncode == 0 and fish.stdout.startswith("list\t"), fish
