"""Files of the command line: reading untrusted ``.npz`` safely, writing outputs atomically.

Nothing here imports JAX: these helpers only move bytes and check paths, and every error
they raise is a one-line ``ValueError`` that names the command-line flag and the file.
"""

from __future__ import annotations

import contextlib
import math
import os
import tempfile
import zipfile
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

import numpy as np

# `np.load`'s own limit on the length of an ``.npy`` header (a Python literal it parses).
_MAX_HEADER_SIZE = 10_000
_NUMERIC_KINDS = "biuf"  # bool, signed and unsigned integers, floats


def _physical_memory() -> int:
    """Bytes of physical memory (the limit on what one file may make us allocate)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):  # pragma: no cover - not POSIX
        return 2**34


def _reason(e: BaseException) -> str:
    """A library's error message on one line, never advising to trust pickles."""
    msg = " ".join(str(e).split()) or type(e).__name__
    if "allow_pickle" in msg:  # numpy's advice (allow_pickle=True) would be unsafe here
        return "not a plain numeric array"
    return msg


def _check_input_path(path: Path, flag: str) -> None:
    name = repr(str(path))
    if not path.exists():
        raise ValueError(f"{flag}: no such file {name}")
    if path.is_dir():
        raise ValueError(f"{flag}: {name} is a folder, not an .npz file")
    if not path.is_file():  # a FIFO or a device would block or never end
        raise ValueError(f"{flag}: {name} is not a regular file")
    try:
        with path.open("rb") as f:
            head = f.read(6)
    except OSError as e:
        raise ValueError(f"{flag}: cannot read {name} ({_reason(e)})") from None
    if head == b"\x93NUMPY":
        raise ValueError(
            f"{flag}: {name} is an .npy file (one array); give an .npz that holds the arrays "
            "by name, e.g. numpy.savez(path, transitions=P, rewards=R)"
        )
    if not zipfile.is_zipfile(path):
        raise ValueError(f"{flag}: {name} is not a readable .npz file (not a zip archive)")


def _member_names(zf: zipfile.ZipFile, known: Collection[str]) -> dict[str, zipfile.ZipInfo]:
    members: dict[str, zipfile.ZipInfo] = {}
    unknown = []
    for info in zf.infolist():
        name = info.filename.removesuffix(".npy")
        if not info.filename.endswith(".npy") or name not in known:
            unknown.append(info.filename)
        elif name in members:
            raise ValueError(f"array {name!r} is stored twice")
        else:
            members[name] = info
    if unknown:
        more = f" and {len(unknown) - 5} more" if len(unknown) > 5 else ""
        raise ValueError(f"unknown array(s) {sorted(unknown)[:5]}{more}")
    return members


def _read_header(zf: zipfile.ZipFile, info: zipfile.ZipInfo):
    """``(shape, fortran_order, dtype, header_length)`` of a member, reading only its header."""
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            header = np.lib.format.read_array_header_1_0(f, max_header_size=_MAX_HEADER_SIZE)
        elif version == (2, 0):
            header = np.lib.format.read_array_header_2_0(f, max_header_size=_MAX_HEADER_SIZE)
        else:  # 3.0 only adds UTF-8 field names of structured dtypes, which are not numeric
            raise ValueError(f"unsupported .npy format version {version}")
        return (*header, f.tell())


def _check_member(name: str, info: zipfile.ZipInfo, header, metadata: bool) -> int:
    """Refuses a member whose header is not a plain numeric array of its stored size.

    Returns the bytes that loading it allocates.
    """
    shape, _, dtype, header_length = header
    described = f"array {name!r} ({dtype.name}, shape {shape})"
    if dtype.hasobject:
        raise ValueError(
            f"array {name!r} holds Python objects (dtype {dtype}); only numeric arrays are read"
        )
    if dtype.kind == "c":
        raise ValueError(
            f"{described} is complex: the imaginary part would be dropped; store real numbers"
        )
    # `privatize` stores its adjacency notion as a string beside the arrays.
    allowed = _NUMERIC_KINDS + ("U" if metadata else "")
    if dtype.kind not in allowed or dtype.fields is not None:
        raise ValueError(f"{described} is not numeric; only numeric arrays are read")
    if any(d < 0 for d in shape):
        raise ValueError(f"{described} declares a negative dimension")
    nbytes = math.prod(shape) * dtype.itemsize
    if header_length + nbytes != info.file_size:
        raise ValueError(
            f"{described} declares {nbytes} bytes of data but its member holds "
            f"{info.file_size - header_length}: the file is corrupt or truncated"
        )
    return nbytes


def read_npz(
    path: Path,
    *,
    required: Collection[str],
    optional: Collection[str] = (),
    ignored: Collection[str] = (),
    flag: str = "--mdp",
    load_ignored: bool = False,
) -> dict[str, np.ndarray]:
    """Reads the named numeric arrays of an untrusted ``.npz`` file.

    Every member's ``.npy`` header is read and checked first, before anything is allocated:
    its dtype must be numeric (bool, integer or float; never objects, which would need
    pickle), and its declared size must match the member's stored size and, summed over the
    members, fit in half the physical memory. Only then are the arrays loaded, with pickles
    disabled, from the same open archive.

    Args:
      path: the file.
      required: names of arrays that must be present.
      optional: names of arrays that may be present.
      ignored: names that may be present and are checked but not loaded (metadata; these may
        also be strings).
      flag: the command-line flag that named the file, for the messages.
      load_ignored: load the ``ignored`` arrays too (a release's record of its mechanism).

    Returns:
      ``{name: array}`` for the required and the present optional arrays (and ignored ones
      with ``load_ignored``).

    Raises:
      ValueError: one line naming ``flag``, the file and, where it applies, the array: no
        such file, a folder, an ``.npy``, not a zip archive, unknown or missing arrays, a
        non-numeric, complex or pickled array, a header that disagrees with the stored size
        or declares too much memory, or any other read error.
    """
    path = Path(path)
    _check_input_path(path, flag)
    where = repr(str(path))
    known = set(required) | set(optional) | set(ignored)
    try:
        with zipfile.ZipFile(path) as zf:
            members = _member_names(zf, known)
            missing = set(required) - set(members)
            if missing:
                raise ValueError(f"lacks array(s) {sorted(missing)}; it has {sorted(members)}")
            total = 0
            for name, info in members.items():
                try:
                    header = _read_header(zf, info)
                except Exception as e:  # untrusted bytes: any failure is a bad file
                    raise ValueError(
                        f"array {name!r} has an unreadable header ({_reason(e)})"
                    ) from None
                total += _check_member(name, info, header, metadata=name in ignored)
            if 2 * total > _physical_memory():
                raise ValueError(
                    f"declares {total / 2**30:.3g} GiB of arrays, more than half of this "
                    "machine's memory"
                )
            # `np.load` would reopen the file by name; reading from this open archive loads
            # exactly the members checked above (with the same allow_pickle=False).
            arrays = {}
            for name, info in members.items():
                if name in ignored and not load_ignored:
                    continue
                try:
                    with zf.open(info) as f:
                        arrays[name] = np.lib.format.read_array(
                            f, allow_pickle=False, max_header_size=_MAX_HEADER_SIZE
                        )
                except Exception as e:
                    raise ValueError(f"array {name!r} cannot be read ({_reason(e)})") from None
    except ValueError as e:
        raise ValueError(f"{flag}: {where}: {' '.join(str(e).split())}") from None
    except Exception as e:  # zipfile's BadZipFile, NotImplementedError, OSError, ...
        raise ValueError(f"{flag}: {where} is not a readable .npz file ({_reason(e)})") from None
    return arrays


def sidecar_path(path) -> Path:
    """``<path>.json``: where a model file's metadata (a release's record) is written."""
    path = Path(path)
    return path.with_name(path.name + ".json")


# --------------------------------------------------------------------------- writing


@contextlib.contextmanager
def atomic_outputs() -> Iterator[Callable[[Path], Path]]:
    """Stages output files and moves them into place together when the block succeeds.

    ``stage(path)`` creates the folder of ``path`` and returns a fresh temporary file beside
    it, with the same suffix (matplotlib picks the format from it); write there. On a clean
    exit every temporary file is ``os.replace``d onto its path; on any exception, Ctrl-C
    included, they are deleted and no path is touched, so an interrupted or failed command
    never leaves a partial file (nor half of a command's outputs), nor an empty folder that
    ``stage`` made.

    Yields:
      ``stage``, a function from a final path to the temporary path to write.
    """
    staged: list[tuple[Path, Path]] = []
    made: list[Path] = []  # folders made here, removed again (if empty) on failure
    umask = os.umask(0)
    os.umask(umask)

    def stage(path: Path) -> Path:
        path = Path(path)
        missing = [p for p in (path.parent, *path.parent.parents) if not p.exists()]
        path.parent.mkdir(parents=True, exist_ok=True)
        made.extend(missing)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=path.suffix)
        staged.append((Path(tmp), path))
        os.close(fd)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp's 0600 would make the outputs private
        return Path(tmp)

    try:
        yield stage
        for tmp, _ in staged:
            with tmp.open("rb") as f:
                os.fsync(f.fileno())  # the data is on disk before the name points at it
        while staged:
            tmp, path = staged[0]
            os.replace(tmp, path)
            staged.pop(0)
        made.clear()
    finally:
        for tmp, _ in staged:
            tmp.unlink(missing_ok=True)
        for folder in sorted(made, key=lambda p: len(p.parts), reverse=True):
            with contextlib.suppress(OSError):
                folder.rmdir()


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """One file of :func:`atomic_outputs`: yields a temporary path, moved onto ``path``."""
    with atomic_outputs() as stage:
        yield stage(path)


# --------------------------------------------------------------------------- output checks


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist
        return a.resolve() == b.resolve()


def _probe(folder: Path, *, make_folder: bool) -> None:
    """Creates and removes a file in ``folder`` (or a folder, where ``--out`` still has to
    be made): the only reliable test. ``os.access`` answers yes to root everywhere, also on
    read-only mounts such as ``/sys``, where the outputs would fail after the computation."""
    if make_folder:
        os.rmdir(tempfile.mkdtemp(dir=folder, prefix=".jaxprivmdp-probe."))
    else:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".jaxprivmdp-probe.")
        os.close(fd)
        os.unlink(tmp)


def _check_writable_folder(folder: Path, flag: str, shown: Path) -> None:
    """Checks that files can be created in ``folder`` or in the folders it would need."""
    existing = folder
    while not existing.exists():
        if existing.parent == existing:
            break
        existing = existing.parent
    if existing.exists() and not existing.is_dir():
        raise ValueError(f"{flag}: {str(existing)!r} is a file, so {str(shown)!r} cannot be made")
    so = "" if existing == shown else f", so {str(shown)!r} cannot be made"
    if not os.access(existing, os.W_OK | os.X_OK):
        raise ValueError(f"{flag}: {str(existing)!r} is not writable{so}")
    try:
        _probe(existing, make_folder=existing != folder)
    except OSError as e:
        why = _kernel_file_system(existing) or e.strerror or _reason(e)
        raise ValueError(f"{flag}: {str(existing)!r} is not writable{so} ({why})") from None


# File systems the kernel makes up: creating a file there fails with an errno (ENOENT in
# /proc) that says nothing of the reason.
_KERNEL_FILE_SYSTEMS = {"proc", "sysfs", "devpts", "cgroup", "cgroup2", "debugfs", "securityfs"}


def _kernel_file_system(folder: Path) -> str | None:
    """Why ``folder`` takes no files, where it lies on a kernel file system (Linux)."""
    try:
        mounts = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return None
    path, best = str(folder.resolve()), ("", "")
    for line in mounts:
        fields = line.split()
        if len(fields) < 3:
            continue
        mount, kind = fields[1], fields[2]
        inside = path == mount or path.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) > len(best[0]):
            best = (mount, kind)
    if best[1] not in _KERNEL_FILE_SYSTEMS:
        return None
    return f"{best[0]!r} is the kernel's {best[1]} file system, which holds no user files"


def check_output_file(
    path: Path, *, flag: str, force: bool, inputs: Sequence[Path | None] = ()
) -> None:
    """Refuses an output file that would destroy an input, a folder, or one that exists.

    Raises:
      ValueError: ``path`` is one of ``inputs`` (even with ``force``), an existing folder,
        an existing file without ``force``, or its folder is not writable.
    """
    path = Path(path)
    for src in inputs:
        if src is not None and _same_file(path, Path(src)):
            raise ValueError(
                f"{flag} {str(path)!r} is the input file; write the output somewhere else"
            )
    if path.is_dir():
        raise ValueError(f"{flag}: {str(path)!r} is a folder; give a file name")
    if path.exists() and not force:
        raise ValueError(f"{flag} {str(path)!r} exists; pass --force to overwrite")
    _check_writable_folder(path.parent, flag, path)


def check_output_folder(
    folder: Path,
    *,
    flag: str,
    names: Sequence[str],
    inputs: Sequence[Path | None] = (),
    force: bool = True,
) -> None:
    """Refuses an output folder that cannot take the files ``names`` without harm.

    Raises:
      ValueError: ``folder`` is a file or not writable (nor the nearest folder above it that
        exists), one of the output files is a folder, is one of ``inputs`` (even with
        ``force``), or exists (an earlier run's result) without ``force``.
    """
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        raise ValueError(f"{flag}: {str(folder)!r} is a file; give a folder")
    for name in names:
        out = folder / name
        if out.is_dir():
            raise ValueError(f"{flag}: {str(out)!r} is a folder, where a file would be written")
        for src in inputs:
            if src is not None and _same_file(out, Path(src)):
                raise ValueError(
                    f"{flag}: {str(out)!r} would overwrite the input file; use another folder"
                )
    earlier = [name for name in names if (folder / name).exists()]
    if earlier and not force:
        raise ValueError(
            f"{flag} {str(folder)!r} already holds {', '.join(earlier)} (an earlier run): pass "
            "--force to overwrite, or give another --out"
        )
    _check_writable_folder(folder, flag, folder)
