"""The manual page of ``rdmaspy``, written in roff from the command-line parser itself, so that it says
what the parser accepts: every command with its usage, description and options.

``rdmaspy manpage > rdmaspy.1`` writes it; ``man ./rdmaspy.1`` reads it.
"""
from __future__ import annotations

import argparse
from typing import Iterator

from . import __version__

ENVIRONMENT = (
    ("RDMASPY_MEMORY_BUDGET", "the memory kept across packets when --memory-budget is not given (e.g. 512M)"),
    ("NO_COLOR", "when set and not empty, decode does not colour its text (unless --color always)"),
    ("FORCE_COLOR", "when set and not empty, decode colours its text even when it is not a terminal"),
    ("TMPDIR", "where spools go when they are not made beside the output file"),
)
EXIT_STATUS = (
    ("0", "success"),
    ("1", "an error: a bad option, filter or file, a file that is no capture, a full disk; one line on stderr"),
    ("2", "a damaged capture: the frames before the damage were decoded, and a warning says where it stopped"),
    ("130, 143", "stopped by Ctrl-C (SIGINT) or SIGTERM, temporary files removed"),
)


def roff_text(text: str) -> str:
    """Text escaped for roff: backslashes, hyphens (so options stay copyable), a leading dot or quote."""
    out = text.replace("\\", "\\e").replace("-", "\\-")
    return "\\&" + out if out.startswith((".", "'")) else out


def _option_label(action: argparse.Action) -> str:
    if not action.option_strings:
        return f"\\fI{roff_text(str(action.metavar or action.dest))}\\fR"
    names = ", ".join(f"\\fB{roff_text(o)}\\fR" for o in action.option_strings)
    if action.nargs == 0:
        return names
    metavar = action.metavar or (("{" + ",".join(map(str, action.choices)) + "}") if action.choices else
                                 action.dest.upper())
    return f"{names} \\fI{roff_text(str(metavar))}\\fR"


def _options(parser: argparse.ArgumentParser) -> Iterator[str]:
    for action in parser._actions:
        if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)) or action.help == argparse.SUPPRESS:
            continue
        yield ".TP"
        yield _option_label(action)
        yield roff_text(action.help or "")


def _usage(parser: argparse.ArgumentParser) -> list[str]:
    """The usage lines argparse makes, at a fixed width (the page must not depend on the terminal)."""
    formatter = argparse.HelpFormatter(parser.prog, width=78)
    formatter.add_usage(parser.usage, parser._actions, parser._mutually_exclusive_groups, prefix="")
    first, *rest = formatter.format_help().strip().splitlines()
    return [".nf", roff_text(first), *(roff_text("    " + line.strip()) for line in rest), ".fi"]


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return [(name, helps.get(name, ""), sub) for name, sub in action.choices.items()]
    return []


def manpage(parser: argparse.ArgumentParser) -> str:
    """The manual page (section 1) of the program ``parser`` parses for."""
    prog = parser.prog
    lines = [f'.TH {prog.upper()} 1 "" "{prog} {__version__}" "User Commands"',
             ".SH NAME", f"{prog} \\- {roff_text(parser.description or '')}",
             ".SH SYNOPSIS", *_usage(parser),
             ".SH DESCRIPTION",
             roff_text(f"{prog} decodes and analyses RDMA captures (pcap and pcapng, gzip-compressed or not) in the "
                       f"manner of tshark: every command below reads a capture given as FILE, as -r FILE, or as - "
                       f"for standard input, unless it says otherwise."),
             ".SH OPTIONS", *_options(parser),
             ".SH COMMANDS"]
    for name, help_text, sub in _subcommands(parser):
        lines += [f'.SS "{roff_text(f"{prog} {name}")}"', roff_text(help_text)]
        if sub.description and sub.description != help_text:
            lines += [".PP", roff_text(sub.description)]
        lines += [".PP", *_usage(sub), *_options(sub)]
    lines.append(".SH ENVIRONMENT")
    for var, text in ENVIRONMENT:
        lines += [".TP", f"\\fB{roff_text(var)}\\fR", roff_text(text)]
    lines.append(".SH EXIT STATUS")
    for code, text in EXIT_STATUS:
        lines += [".TP", roff_text(code), roff_text(text)]
    lines += [".SH SEE ALSO", "\\fBtshark\\fR(1), \\fBwireshark\\fR(1), \\fBtcpdump\\fR(8)"]
    return "\n".join(lines) + "\n"
