"""``run --addon FILE[:NAME]``: views of the user's own, from a Python file, in the live
session's chain (mitmproxy's ``-s script.py``).

The file is an ordinary Python module. It names what to load with ``addons = [...]`` (each
an :class:`~acp_proxy.transcript.items.Addon`, or an Addon class, made with no arguments),
or ``FILE:NAME`` names one thing in it (an Addon, an Addon class, or a list of them). The
same file reads a recording with no change: ``View().feed(acp_proxy.read(path))``.

What the file's code prints goes to stderr: stdout belongs to the protocol (``run`` points
``sys.stdout`` at stderr before the file is loaded). An addon that raises while the session
runs is said once in the log and dropped, as any part of the chain; one that cannot be
loaded is a usage error, before anything crosses. An addon runs as the frames cross (in the
relay's thread, as every part of the chain): one that is slow slows the session.
"""

from __future__ import annotations

import runpy
from pathlib import Path
from typing import Any

from acp_proxy.core.visible import visible
from acp_proxy.transcript.items import Addon

__all__ = ["AddonFileError", "load_addons", "split_spec"]


class AddonFileError(Exception):
    """The file of ``--addon`` could not give addons: what went wrong, in a line."""


def split_spec(spec: str) -> tuple[Path, str | None]:
    """``FILE`` or ``FILE:NAME`` (NAME a Python identifier; a path may hold ``:`` too)."""
    path, colon, name = spec.rpartition(":")
    if colon and path and name.isidentifier():
        return Path(path), name
    return Path(spec), None


def load_addons(spec: str) -> list[Addon]:
    """The addons ``spec`` (``FILE`` or ``FILE:NAME``) names. Raises
    :class:`AddonFileError` with one line saying why not."""
    path, name = split_spec(spec)
    shown = visible(str(path))
    if not path.is_file():
        raise AddonFileError(f"{shown}: no such file")
    try:
        namespace = runpy.run_path(str(path), run_name="acp_proxy_addon")
    except SystemExit as exc:
        raise AddonFileError(f"{shown}: exited while loading ({exc.code!r})") from exc
    except BaseException as exc:
        if isinstance(exc, KeyboardInterrupt):
            raise
        where = ""
        if isinstance(exc, SyntaxError) and exc.lineno:
            where = f":{exc.lineno}"
        reason = visible(f"{type(exc).__name__}: {exc}")
        raise AddonFileError(f"{shown}{where}: {reason}") from exc
    key = name or "addons"
    if key not in namespace:
        if name:
            raise AddonFileError(f"{shown} has no {visible(name)}")
        raise AddonFileError(f"{shown} defines no `addons` list (or name one: {shown}:NAME)")
    return _as_addons(namespace[key], f"{shown}:{visible(key)}")


def _as_addons(given: Any, where: str) -> list[Addon]:
    """An Addon, an Addon class (made with no arguments), or a list or tuple of them."""
    values = list(given) if isinstance(given, list | tuple) else [given]
    if not values:
        raise AddonFileError(f"{where} is empty")
    addons = []
    for value in values:
        one = _made(value, where) if isinstance(value, type) else value
        if not isinstance(one, Addon):
            raise AddonFileError(f"{where}: {visible(repr(one)[:80])} is not an acp_proxy.Addon")
        if one.name == Addon.name:  # what the log calls it, if it fails: the user's own
            one.name = f"the addon {visible(type(one).__name__)} ({where})"
        addons.append(one)
    return addons


def _made(cls: type, where: str) -> Any:
    """An Addon class, made with no arguments (any other class is said not an Addon)."""
    if not issubclass(cls, Addon):
        return cls
    try:
        return cls()
    except Exception as exc:
        reason = visible(f"{type(exc).__name__}: {exc}")
        raise AddonFileError(f"{where}: {visible(cls.__name__)}() failed: {reason}") from exc
