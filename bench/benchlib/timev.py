"""A command as a user runs it under ``/usr/bin/time -v``: what the kernel counted for it."""
import re
from typing import Dict

# /usr/bin/time -v's line -> the key a study records
FIELDS = {
    "User time (seconds)": "user_s",
    "System time (seconds)": "system_s",
    "Maximum resident set size (kbytes)": "peak_rss_kb",
    "Minor (reclaiming a frame) page faults": "minor_faults",
    "Major (requiring I/O) page faults": "major_faults",
    "Voluntary context switches": "voluntary_switches",
    "Involuntary context switches": "involuntary_switches",
    "Exit status": "exit_status",
}


def parse_time_v(text: str) -> Dict[str, float]:
    """The counts of a ``/usr/bin/time -v`` report in ``text`` (a log that ends with one),
    with the wall clock in seconds (``wall_s``) and the peak RSS in MiB (``peak_rss_mb``).

    text (str): the report, alone or at the end of the command's own output.
    RETURNS (Dict[str, float]): the fields found.
    """
    found: Dict[str, float] = {}
    for label, key in FIELDS.items():
        match = re.search(rf"{re.escape(label)}: ([\d.]+)", text)
        if match:
            found[key] = float(match.group(1))
    wall = re.search(r"Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): ([\d:.]+)", text)
    if wall:
        seconds = 0.0
        for part in wall.group(1).split(":"):
            seconds = seconds * 60 + float(part)
        found["wall_s"] = seconds
    if "peak_rss_kb" in found:
        found["peak_rss_mb"] = found["peak_rss_kb"] / 1024
    return found
