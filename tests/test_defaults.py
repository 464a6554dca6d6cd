"""Each setting has its default in one place: the signature of the registered function (or of
``NestedMRCNER``) that takes it. The factory's default model only names its architecture and
blocks, the architectures leave their blocks' settings to the blocks, and where two
functions take the same setting with the same default, both name one shared constant.

The flat v1 architectures (``models/legacy.py``) are left out: they keep the settings and
defaults of the release before the blocks, so that its configs build what they built."""

import ast
import inspect
import textwrap
from collections import defaultdict
from importlib.metadata import entry_points

from thinc.api import Config

from spacy_nested_mrc.component import DEFAULT_MODEL_CONFIG, NestedMRCNER, make_nested_mrc_ner

GROUPS = ("spacy_architectures", "spacy_misc", "spacy_span_getters", "spacy_readers",
          "spacy_tokenizers", "spacy_callbacks", "spacy_scorers")
# settings of the same name and default that mean different things in their functions
DISTINCT = {
    "then": "the next callback of a chain (none), in two unrelated callbacks",
    "gold_preproc": "read the gold tokens, spaCy's readers' own default",
    "seed": "the seed of two unrelated random draws: Locate-and-Label's seed spans and the "
            "mixed reader's corpora",
}


def registered():
    """Our registered functions (the flat v1 ones left out), and the pipe's class."""
    found = {"NestedMRCNER": NestedMRCNER.__init__}
    for group in GROUPS:
        for ep in entry_points(group=group):
            if ep.value.startswith("spacy_nested_mrc.") and ".legacy:" not in ep.value:
                found[ep.name] = ep.load()
    return found


def written_defaults(func):
    """Each parameter's default as written in the source, e.g. ``'1024'`` or
    ``'DEFAULT_MAX_PASS_TOKENS'``."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(func)))
    node = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef))
    args = node.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    pairs += [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]
    return {arg.arg: ast.unparse(default) for arg, default in pairs}


def test_the_factorys_default_model_sets_no_value():
    """``DEFAULT_MODEL_CONFIG`` names the architecture and each block's function; every
    value comes from their signatures."""
    def values(section):
        for key, value in section.items():
            if isinstance(value, dict):
                yield from values(value)
            elif not key.startswith("@"):
                yield key

    assert list(values(Config().from_str(DEFAULT_MODEL_CONFIG))) == []


def test_the_factory_takes_the_pipes_defaults_from_the_class():
    params = inspect.signature(make_nested_mrc_ner).parameters.values()
    assert all(p.default is inspect.Parameter.empty for p in params)


def test_architectures_leave_their_blocks_settings_to_the_blocks():
    """No architecture takes a setting that one of its blocks takes too."""
    funcs = registered()
    from spacy.util import registry

    for name in ("spacy-nested-mrc.MRCQuery.v2", "spacy-nested-mrc.MultiNER.v2",
                 "spacy-nested-mrc.LocateAndLabel.v2"):
        own = set(inspect.signature(funcs[name]).parameters)
        config = Config().from_str(DEFAULT_MODEL_CONFIG) if "MRC" in name else None
        blocks = [k for k in own if k in ("encoder", "questions", "windows", "heads", "loss",
                                          "decoder", "seeds")]
        assert blocks, name
        for block in blocks:
            ref = (config["model"][block]["@misc"] if config is not None and block in
                   config["model"] else None)
            if ref is None:
                continue
            assert not own & set(inspect.signature(registry.misc.get(ref)).parameters)


def test_no_default_is_written_in_two_places():
    by_setting = defaultdict(list)
    for name, func in registered().items():
        written = written_defaults(func)
        for key, param in inspect.signature(func).parameters.items():
            if param.default is not inspect.Parameter.empty:
                by_setting[(key, repr(param.default))].append((name, written[key]))
    twice = {
        setting: places for setting, places in by_setting.items()
        if len(places) > 1 and setting[0] not in DISTINCT
        # written as literals, or as different constants
        and (len({text for _, text in places}) > 1
             or not next(iter(places))[1].isidentifier())
    }
    assert twice == {}
