"""Take a PNG screenshot of an HTML file with headless Chromium, if Chromium is installed.

    python scripts/screenshot.py visualize/dev.html visualize/dev.png --chromium /usr/bin/chromium

Without a Chromium binary the screenshot is skipped (exit code 0): the HTML file is the
output that matters. The browser runs without network services and with a throwaway profile.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import List, Optional

import typer

FALLBACKS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


def find_chromium(preferred: str) -> Optional[str]:
    """RETURNS (Optional[str]): ``preferred`` if it is an executable, else the first browser of
    ``FALLBACKS`` on the PATH, else None."""
    if Path(preferred).is_file():
        return preferred
    for name in (preferred, *FALLBACKS):
        found = shutil.which(name)
        if found:
            return found
    return None


def chromium_command(binary: str, html: Path, png: Path, profile: str, size: str) -> List[str]:
    """RETURNS (List[str]): the command line that renders ``html`` into ``png``."""
    return [
        binary,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--hide-scrollbars",
        f"--user-data-dir={profile}",
        f"--screenshot={png.resolve()}",
        f"--window-size={size}",
        html.resolve().as_uri(),
    ]


def main(
    html: Path = typer.Argument(..., exists=True, dir_okay=False, help="HTML file to render"),
    png: Path = typer.Argument(..., help="PNG file to write"),
    chromium: str = typer.Option("/usr/bin/chromium", help="browser binary (or name on PATH)"),
    window_size: str = typer.Option("1200,900", help="width,height in pixels"),
    timeout: int = typer.Option(120, help="seconds before the browser is stopped"),
):
    """Render HTML to PNG with headless Chromium; skip when no browser is found."""
    binary = find_chromium(chromium)
    if binary is None:
        typer.echo(f"No Chromium found ({chromium}): screenshot skipped, see {html}")
        return
    png.parent.mkdir(parents=True, exist_ok=True)
    if png.exists():
        png.unlink()
    with tempfile.TemporaryDirectory(prefix="chromium-profile-") as profile:
        command = chromium_command(binary, html, png, profile, window_size)
        result = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0 or not png.is_file():
        typer.echo(f"Chromium failed (exit code {result.returncode}):\n{result.stderr}", err=True)
        raise typer.Exit(1)
    typer.echo(f"Saved {png}")


if __name__ == "__main__":
    typer.run(main)
