"""Files written whole or not at all, for every writer of the package (the converters and
``annotate``): a reader, or a job run again, sees the old file or the complete new one."""

import os
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Dict, Iterator, Mapping


@contextmanager
def atomic_files(paths: Mapping[str, Path]) -> Iterator[Dict[str, Path]]:
    """Temporary files to write in place of ``paths`` (by key), beside them. When the block
    ends without an error, each is flushed to disk, given the permissions a new file gets
    and renamed over its path; on an error they are removed and nothing is replaced. Their
    names (``NAME.XXXX.tmp``) are unique per call, so two jobs never share one.

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
    except BaseException:
        for tmp in temporary.values():
            tmp.unlink(missing_ok=True)
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
