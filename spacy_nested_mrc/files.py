"""Files written whole or not at all, for every writer of the package (the converters and
``annotate``): a reader, or a job run again, sees the old file or the complete new one; and
files read as they are or gunzipped on the fly, for every reader; config files read with a
coded error where they are not configs."""

import errno
import gzip
import os
import tempfile
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Dict, Iterator, Mapping, Optional, Union

from .errors import Errors

if TYPE_CHECKING:
    from thinc.api import Config

# what the user can remedy when a write fails: space, and the right to write
NO_SPACE = (errno.ENOSPC, errno.EDQUOT)
NOT_WRITABLE = (errno.EROFS, errno.EACCES, errno.EPERM)


# a .txt or .jsonl file may be gzip-compressed: "text.txt.gz"
GZIP = ".gz"


def open_bytes(path: Path) -> BinaryIO:
    """RETURNS (BinaryIO): the file opened for reading bytes, decompressed if its name ends
    in .gz."""
    return gzip.open(path, "rb") if path.suffix == GZIP else path.open("rb")  # type: ignore


def read_config(path: Union[str, Path], overrides: Optional[Dict[str, Any]] = None,
                interpolate: bool = True) -> "Config":
    """A config file, as ``spacy.util.load_config`` reads it.

    RAISES (ValueError): NME017 naming the file and the parser's complaint, for a file that
        is not a config.
    """
    from confection import ConfigValidationError
    from spacy.util import load_config

    try:
        return load_config(path, overrides=dict(overrides or {}), interpolate=interpolate)
    except ConfigValidationError as err:
        error = " ".join(str(err).split())
        raise ValueError(Errors.NME017.format(path=path, error=error)) from None


class WriteError(OSError):
    """A file that could not be written for a reason the user can remedy (a full disk, a
    read-only folder, permissions), with a coded message naming the path and the remedy."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.errno = code


def as_write_error(err: OSError, path: Union[str, Path]) -> OSError:
    """RETURNS (OSError): ``err`` as a ``WriteError`` of ``path`` if it is one the user can
    remedy (``NO_SPACE``, ``NOT_WRITABLE``), else ``err`` itself."""
    if isinstance(err, WriteError):
        return err
    if err.errno in NO_SPACE:
        return WriteError(Errors.NME190.format(path=path, error=err.strerror), err.errno)
    if err.errno in NOT_WRITABLE:
        return WriteError(Errors.NME191.format(path=path, error=err.strerror), err.errno)
    return err


@contextmanager
def atomic_files(paths: Mapping[str, Path]) -> Iterator[Dict[str, Path]]:
    """Temporary files to write in place of ``paths`` (by key), beside them. When the block
    ends without an error, each is flushed to disk, given the permissions a new file gets
    and renamed over its path; on an error they are removed and nothing is replaced (a full
    disk or a folder that cannot be written raises ``WriteError``). Their names
    (``NAME.XXXX.tmp``) are unique per call, so two jobs never share one.

    paths (Mapping[str, Path]): the files to write, by key; their folders are created.
    YIELDS (Dict[str, Path]): the temporary file of each key.
    """
    temporary: Dict[str, Path] = {}
    try:
        for key, path in paths.items():
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, name = tempfile.mkstemp(dir=path.parent, prefix=path.name + ".", suffix=".tmp")
            os.close(fd)
            temporary[key] = Path(name)
        yield temporary
        mode = _new_file_mode()
        for key, tmp in temporary.items():
            _flush_to_disk(tmp)
            os.chmod(tmp, mode)  # mkstemp's files are private (0600)
            os.replace(tmp, paths[key])
    except BaseException as err:
        for tmp in temporary.values():
            with suppress(OSError):
                tmp.unlink(missing_ok=True)
        if isinstance(err, OSError):
            failed = as_write_error(err, ", ".join(str(p) for p in paths.values()))
            if failed is not err:
                raise failed from err
        raise


def write_atomic(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` whole or not at all (``atomic_files``)."""
    with atomic_files({"file": path}) as tmp:
        tmp["file"].write_bytes(data)


def _flush_to_disk(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _new_file_mode() -> int:
    """The permissions ``open`` gives a new file under the process's umask."""
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
