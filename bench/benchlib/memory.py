"""The resident size of a running process and its children, read from /proc (the peak of the
current process is ``spacy_nested_mrc.runtime.memory.peak_rss_mb``)."""
from typing import List


def rss_mb(pid: int) -> float:
    """The resident size of a process and its children, MB (0 once it is gone)."""
    total = 0.0
    for p in [pid, *children(pid)]:
        try:
            with open(f"/proc/{p}/status") as status:
                for line in status:
                    if line.startswith("VmRSS"):
                        total += int(line.split()[1]) / 1024
        except FileNotFoundError:
            pass
    return total


def children(pid: int) -> List[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as file_:
            return [int(c) for c in file_.read().split()]
    except FileNotFoundError:
        return []
