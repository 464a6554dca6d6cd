"""docs/settings.md is what the code says: its tables are regenerated from the registered
functions' signatures and docstrings and must equal the committed page, and every setting
has a meaning in its function's docstring (so a default lives in one place, the signature)."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[1]


def load_generator():
    path = ROOT / "docs" / "make_settings.py"
    spec = importlib.util.spec_from_file_location("make_settings", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_settings_page_is_generated_from_the_code():
    generator = load_generator()
    expected, _ = generator.render()
    committed = generator.generated_part(generator.PAGE.read_text(encoding="utf8"))
    assert committed == expected, "docs/settings.md is stale: run python docs/make_settings.py"


def test_every_setting_has_a_meaning():
    _, missing = load_generator().render()
    assert missing == {}


def test_documented_settings_parse():
    generator = load_generator()

    def example(a, b, c=1):
        """Example.

        a (int): the first.
        b, c (str): two at once,
            over two lines.
        RETURNS (int): not a setting.
        """

    assert generator.documented(example) == {
        "a": ("int", "the first."),
        "b": ("str", "two at once, over two lines."),
        "c": ("str", "two at once, over two lines."),
    }
