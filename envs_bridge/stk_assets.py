"""SuperTuxKart's game assets from Debian's ``supertuxkart-data`` package, without a download.

``pystk2.init()`` downloads its assets unless ``SUPERTUXKART_DATADIR`` names a folder holding
``data/``; :func:`prepare_data_dir` makes Debian's folder into one it accepts (``SUPERTUXKART.md``).

Example::

    root = configure_environment()   # then pystk2.init(...)
"""

from __future__ import annotations

import os
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

#: Where Debian's ``supertuxkart-data`` package puts the assets.
DEBIAN_DATA = Path("/usr/share/games/supertuxkart/data")
#: The version marker file ``pystk2`` 0.7 looks for in ``data/``.
MARKER = "supertuxkart.1.5"
#: 1.5's default GUI skin, missing in 1.4, and the 1.4 skin that stands in for it.
DEFAULT_SKIN, STAND_IN_SKIN = "classic", "peach"
#: Without this, Mesa's llvmpipe stalls for 1-30 s on some frames (SUPERTUXKART.md).
MESA_EXTENSION_OVERRIDE = "-GL_EXT_texture_filter_anisotropic -GL_ARB_texture_filter_anisotropic"
#: SDL's video driver without OpenGL, with which ``pystk2.init`` cannot render and exits.
NO_GL_SDL_DRIVER = "dummy"
#: Environment variable that overrides the default folder.
ENV_VAR = "JGTEST_STK_DATA"


def default_root() -> Path:
    """``$JGTEST_STK_DATA`` if set, else the user cache's ``jgtest/supertuxkart``."""
    if os.environ.get(ENV_VAR):
        return Path(os.environ[ENV_VAR]).expanduser()
    import platformdirs  # a dependency of pysupertuxkart2

    return Path(platformdirs.user_cache_dir("jgtest")) / "supertuxkart"


def _debian_marker(source: Path) -> Path:
    """Debian's ``supertuxkart.1.x`` marker, or the error saying how to install the package."""
    markers = sorted(source.glob("supertuxkart.1.*")) if source.is_dir() else []
    if not markers:
        raise FileNotFoundError(
            f"SuperTuxKart's game data was not found in {source}: install Debian's package with "
            "`apt-get install supertuxkart-data` (jgtest never downloads the assets)"
        )
    return markers[-1]


def _link(link: Path, target: Path) -> None:
    """Makes ``link`` a symlink to ``target``; keeps a right one, replaces a wrong symlink,
    refuses to touch a real file or folder. Safe when several processes do it at once."""
    if link.is_symlink():
        if Path(os.readlink(link)) == target:
            return
    elif link.exists():
        raise FileExistsError(
            f"{link} exists and is not a symlink; remove it or choose another folder"
        )
    tmp = link.with_name(f".{link.name}.{os.getpid()}.tmp")
    tmp.unlink(missing_ok=True)
    tmp.symlink_to(target)
    os.replace(tmp, link)


def _copy(dest: Path, source: Path) -> None:
    """Makes ``dest`` a copy of ``source`` (atomically; kept when already equal)."""
    if dest.is_file() and not dest.is_symlink() and dest.read_bytes() == source.read_bytes():
        return
    with tempfile.NamedTemporaryFile(dir=dest.parent, prefix=f".{dest.name}.", delete=False) as tmp:
        tmp.write(source.read_bytes())
    os.replace(tmp.name, dest)


def prepare_data_dir(
    root: str | os.PathLike | None = None, source: str | os.PathLike = DEBIAN_DATA
) -> Path:
    """Builds (or checks), once and idempotently, an asset folder ``pystk2`` 0.7 accepts.

    Debian's folder (``/usr/share/games/supertuxkart/data``, version 1.4) fails as is (``Could not
    find file 'supertuxkart.1.5'``, ``Canot load default GUI skin``); the folder built is::

        <root>/data/<entry>              -> symlink to Debian's <entry>, for every entry but skins/
        <root>/data/supertuxkart.1.5     a copy of Debian's version marker (supertuxkart.1.4)
        <root>/data/skins/<skin>         -> symlink to Debian's skins/<skin>
        <root>/data/skins/classic        -> symlink to Debian's skins/peach (1.5's default skin)

    Args:
      root: the folder to build (default :func:`default_root`); it gets a ``data/`` child.
      source: Debian's data folder.

    Returns:
      ``root``, absolute: the value for ``SUPERTUXKART_DATADIR``.

    Raises:
      FileNotFoundError: Debian's package is not installed (says ``apt-get install
        supertuxkart-data``).
      FileExistsError: ``root/data`` holds a real file or folder where a symlink belongs.
    """
    source = Path(source).resolve()
    marker = _debian_marker(source)
    root = (Path(root).expanduser() if root is not None else default_root()).absolute()
    data = root / "data"
    skins = data / "skins"
    skins.mkdir(parents=True, exist_ok=True)
    for entry in source.iterdir():
        if entry.name != "skins":
            _link(data / entry.name, entry)
    _copy(data / MARKER, marker)
    for skin in (source / "skins").iterdir():
        _link(skins / skin.name, skin)
    if not (skins / DEFAULT_SKIN).exists():
        _link(skins / DEFAULT_SKIN, source / "skins" / STAND_IN_SKIN)
    return root


def race_tracks(root: str | os.PathLike) -> list[str]:
    """The race tracks of the asset folder ``root`` (sorted): those whose ``track.xml`` is not
    marked internal, arena or soccer; ``pystk2.list_tracks(NORMAL_RACE)``'s list, readable
    before ``pystk2.init`` (which a process can run only once)."""
    tracks = []
    for xml in sorted((Path(root) / "data" / "tracks").glob("*/track.xml")):
        flags = ET.parse(xml).getroot().attrib
        if not any(flags.get(k, "N").upper() == "Y" for k in ("internal", "arena", "soccer")):
            tracks.append(xml.parent.name)
    return tracks


def configure_environment(root: str | os.PathLike | None = None) -> Path:
    """Prepares the asset folder and sets ``SUPERTUXKART_DATADIR`` and ``MESA_EXTENSION_OVERRIDE``
    (the latter only if unset) for a ``pystk2.init`` in this process; returns the folder.

    It also drops ``SDL_VIDEODRIVER=dummy``, which the Gymnasium bridge sets for pygame's games and
    child processes inherit: SDL's dummy driver has no OpenGL, so irrlicht cannot open its device
    and ``pystk2.init`` exits the whole process ("Couldn't initialise irrlicht device")."""
    path = prepare_data_dir(root)
    os.environ["SUPERTUXKART_DATADIR"] = str(path)
    os.environ.setdefault("MESA_EXTENSION_OVERRIDE", MESA_EXTENSION_OVERRIDE)
    if os.environ.get("SDL_VIDEODRIVER") == NO_GL_SDL_DRIVER:
        del os.environ["SDL_VIDEODRIVER"]
    return path
