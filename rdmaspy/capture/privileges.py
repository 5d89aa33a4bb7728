"""Giving up root once the capture socket is open (``capture -Z USER``, as tcpdump's ``-Z``)."""
from __future__ import annotations

import os
import pwd

from ..errors import RdmaspyError


def drop_to(user: str) -> None:
    """Become ``user`` (a name or a numeric uid) with its primary group and supplementary groups.

    The packet socket and its ring stay open and usable; what is opened afterwards (the output files)
    is opened as ``user`` and belongs to it.  Root cannot be regained.
    """
    try:
        entry = pwd.getpwuid(int(user)) if user.isdigit() else pwd.getpwnam(user)
    except (KeyError, ValueError):
        raise RdmaspyError(f"-Z {user}: no such user") from None
    try:
        os.initgroups(entry.pw_name, entry.pw_gid)
        os.setgid(entry.pw_gid)
        os.setuid(entry.pw_uid)
    except PermissionError:
        raise RdmaspyError(f"-Z {user}: cannot change to this user: only root can") from None
    except OSError as exc:
        raise RdmaspyError(f"-Z {user}: cannot change to this user: {exc.strerror or exc}") from None
    if entry.pw_uid != 0 and (os.getuid() == 0 or os.geteuid() == 0):
        raise RdmaspyError(f"-Z {user}: still root after changing user")
