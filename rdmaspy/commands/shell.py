"""``rdmaspy completion bash|zsh`` and ``rdmaspy manpage``: the shell completion script and the manual page,
both generated from the command-line parser (shtab for completion, rdmaspy.manpage for the page), so they
know every command and option the program has."""
from __future__ import annotations

import argparse
import sys
from typing import Any

SHELLS = ("bash", "zsh")
# The arguments that name files, completed as paths by the shell.
_PATHS = frozenset({"file", "read_file", "output", "write", "filter_file"})


def cmd_completion(args: argparse.Namespace) -> int:
    import shtab

    parser: argparse.ArgumentParser = args.root_parser
    for p in _parsers(parser):
        for action in p._actions:
            if action.dest in _PATHS:
                action.complete = shtab.FILE          # type: ignore[attr-defined]
    sys.stdout.write(shtab.complete(parser, shell=args.shell))
    sys.stdout.flush()
    return 0


def cmd_manpage(args: argparse.Namespace) -> int:
    from ..manpage import manpage
    sys.stdout.write(manpage(args.root_parser))
    sys.stdout.flush()
    return 0


def _parsers(parser: argparse.ArgumentParser) -> list[argparse.ArgumentParser]:
    out = [parser]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                out += _parsers(sub)
    return out


def register(sub: Any) -> None:
    c = sub.add_parser("completion", help="print the shell completion script (bash or zsh)",
                       description="Print a completion script for rdmaspy's commands, options and files. bash: "
                                   "rdmaspy completion bash > ~/.local/share/bash-completion/completions/rdmaspy; "
                                   "zsh: rdmaspy completion zsh > a directory of your $fpath, named _rdmaspy.")
    c.add_argument("shell", choices=SHELLS, help="the shell to complete for")
    c.set_defaults(func=cmd_completion)
    m = sub.add_parser("manpage", help="print the manual page (roff), generated from the options",
                       description="Print rdmaspy's manual page in roff: rdmaspy manpage > ~/.local/share/man/man1/"
                                   "rdmaspy.1, then man rdmaspy.")
    m.set_defaults(func=cmd_manpage)
