"""The ``spacy project`` workflow of project/ end to end on the shipped sample (written as
GENIA 3.02 XML) and the tiny encoder: raw corpus -> convert-genia -> convert -> train -> tune
-> evaluate -> package -> visualize, then the packaged pipeline installed and loaded by name in
a fresh process that cannot see the training folders."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import srsly
from spacy.cli.project.run import project_run

# trains pipelines or starts processes: deselected by -m "not slow"
pytestmark = pytest.mark.slow

ROOT = Path(__file__).parents[2]
PROJECT = ROOT / "project"
SAMPLE = ROOT / "spacy_nested_mrc" / "sample"
NAME = "nested_mrc_test"
VERSION = "0.0.1"


@pytest.fixture(scope="module")
def workflow(tiny_bert, tmp_path_factory) -> Path:
    """RETURNS (Path): a copy of project/ after ``spacy project run all``."""
    project_dir = tmp_path_factory.mktemp("project") / "project"
    shutil.copytree(PROJECT, project_dir, ignore=shutil.ignore_patterns(*_outputs()))
    raw = tmp_path_factory.mktemp("genia_raw")
    write_genia_xml(raw / "GENIAcorpus3.02.xml", SAMPLE / "train.jsonl", SAMPLE / "dev.jsonl")
    overrides = {
        "vars.genia_raw_dir": str(raw),
        "vars.configs_dir": str(ROOT / "configs"),
        "vars.encoder": tiny_bert,
        "vars.encoder_license": "MIT",
        "vars.train_limit": 12,
        "vars.dev_limit": 4,
        "vars.max_epochs": 1,
        "vars.eval_frequency": 2,
        "vars.vis_limit": 3,
        "vars.tune_gate_grid": "0.4,0.5",
        "vars.package_name": NAME,
        "vars.package_version": VERSION,
    }
    project_run(project_dir, "all", overrides=overrides, capture=True)
    return project_dir


def write_genia_xml(path: Path, *jsonl: Path) -> None:
    """Write GENIA-style JSONL records as GENIA 3.02 XML (one article per record, the
    sentence as its title, each entity a nested ``cons``), so that the workflow starts from
    the raw format. The records' tokens must carry no XML-special characters."""
    sentences = []
    for file_ in jsonl:
        for line in file_.read_text(encoding="utf8").splitlines():
            record = json.loads(line)
            sentences.append(_xml_sentence(record["tokens"], record["entities"]))
    # the converter's split takes dev from the first 6,676 sentences: every 4th of them
    articles = "".join(
        f"<article><articleinfo><bibliomisc>MEDLINE:{i}</bibliomisc></articleinfo>"
        f"<title>{sentence}</title></article>\n" for i, sentence in enumerate(sentences))
    path.write_text(f'<?xml version="1.0"?>\n<set>\n{articles}</set>\n', encoding="utf8")


def _xml_sentence(tokens, entities) -> str:
    spans = sorted({(e["start"], e["end"], e["type"]) for e in entities},
                   key=lambda s: (s[0], -s[1]))

    def render(start: int, end: int, inside) -> str:
        parts, at = [], start
        while inside:
            s, e, label = inside.pop(0)
            children = [c for c in inside if c[1] <= e]
            inside = [c for c in inside if c[0] >= e]
            parts += tokens[at:s]
            text = render(s, e, children)
            parts.append(f'<cons lex="{"_".join(tokens[s:e])}" sem="G#{label}">{text}</cons>')
            at = e
        parts += tokens[at:end]
        return " ".join(parts)

    return f"<sentence>{render(0, len(tokens), spans)}</sentence>"


def _outputs():
    return ["assets", "corpus", "training", "metrics", "packages", "visualize", "project.lock"]


def test_every_command_wrote_its_outputs(workflow):
    config = srsly.read_yaml(PROJECT / "project.yml")
    commands = {c["name"]: c for c in config["commands"]}
    for step in config["workflows"]["all"]:
        for output in commands[step].get("outputs", []):
            path = output.replace("${vars.package_name}", NAME)
            path = path.replace("${vars.package_version}", VERSION)
            if path.endswith(".png") and shutil.which("chromium") is None:
                continue  # the screenshot is skipped without a browser, by design
            assert (workflow / path).exists(), f"{step} did not write {path}"


def test_train_keeps_the_configs_schedule_where_the_vars_are_empty(workflow):
    """max_epochs is set on the command line (1), warmup_steps is left empty: the trained
    pipeline's config has the first from the var and the second from the shipped config."""
    from spacy.util import load_config

    project = srsly.read_yaml(PROJECT / "project.yml")
    assert project["vars"]["max_epochs"] == "" and project["vars"]["warmup_steps"] == ""
    shipped = load_config(ROOT / "configs" / f"{project['vars']['config']}.cfg")
    trained = load_config(workflow / "training" / "model-last" / "config.cfg")
    assert trained["training"]["max_epochs"] == 1
    warmup = [c["training"]["optimizer"]["learn_rate"]["warmup_steps"] for c in (trained, shipped)]
    assert warmup[0] == warmup[1]


@pytest.mark.parametrize(
    "args,kept",
    [
        (["c.cfg", "--training.max_epochs", "", "--output", "t"], ["c.cfg", "--output", "t"]),
        (["--training.max_epochs", "2", "--x.y", " "], ["--training.max_epochs", "2"]),
        (["--gpu-id", "-1", "--paths.train", "a"], ["--gpu-id", "-1", "--paths.train", "a"]),
        (["--verbose", "", "--a.b=", "--c.d"], ["--verbose", "", "--a.b=", "--c.d"]),
    ],
)
def test_train_script_drops_only_empty_overrides(args, kept):
    import runpy

    script = runpy.run_path(str(PROJECT / "scripts" / "train.py"))
    assert script["drop_empty_overrides"](args) == kept


def test_evaluation_agrees_with_spacy_evaluate(workflow):
    ours = srsly.read_json(workflow / "metrics" / "report.json")["scores"]
    theirs = srsly.read_json(workflow / "metrics" / "spacy_scores.json")
    for name in ("p", "r", "f"):
        assert ours[f"spans_nested_{name}"] == pytest.approx(theirs[f"spans_nested_{name}"])
    assert (workflow / "metrics" / "report.md").read_text().strip()


def test_tune_step_chose_thresholds_that_the_evaluated_pipeline_uses(workflow):
    tuning = srsly.read_json(workflow / "metrics" / "tuning.json")
    tuned = srsly.read_json(workflow / "training" / "model-tuned" / "meta.json")["tuning"]
    assert tuned["settings"] == tuning["overrides"]
    assert {p["gates"]["decoder.start_threshold"] for p in tuning["curve"]} >= {0.4, 0.5}
    # the evaluation scores model-tuned: its F1 is the one tune chose
    theirs = srsly.read_json(workflow / "metrics" / "spacy_scores.json")
    assert theirs["spans_nested_f"] == pytest.approx(tuning["best"]["f"])


def test_meta_carries_scores_and_encoder_licence(workflow):
    meta = srsly.read_json(workflow / "metrics" / "meta.json")
    assert meta["name"] == NAME and meta["version"] == VERSION
    assert "spans_nested_f" in meta["performance"]
    assert meta["encoder"]["license"] == "MIT"
    assert meta["encoder"]["name"].endswith("tiny_bert0")


def test_visualization_shows_gold_and_predicted(workflow):
    html = (workflow / "visualize" / "dev.html").read_text(encoding="utf8")
    assert "gold" in html.lower() and "predicted" in html.lower()


def test_package_installs_and_loads_by_name_elsewhere(workflow, tmp_path):
    """pip installs the sdist into a folder of its own; a fresh process in an empty folder
    loads the pipeline by its name and finds nested spans' scores in doc.spans."""
    sdist = next((workflow / "packages").rglob(f"en_{NAME}-{VERSION}.tar.gz"))
    target = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target),
         str(sdist)],
        check=True,
    )
    shutil.rmtree(workflow / "training")  # the package must not need the training folder
    script = (
        "import json, spacy\n"
        f"nlp = spacy.load('en_{NAME}')\n"
        "doc = nlp('Induction of IL-2 gene expression in human T cells .')\n"
        "group = doc.spans['nested']\n"
        "print(json.dumps({'pipes': nlp.pipe_names, 'meta': nlp.meta['name'],\n"
        "    'n': len(group), 'scores': len(group.attrs['scores'])}))\n"
    )
    env = {"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", script], check=True, capture_output=True, text=True,
        cwd=tmp_path, env=env,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["pipes"] == ["nested_mrc_ner"]
    assert result["meta"] == NAME
    assert result["n"] == result["scores"]


def test_fetch_genia_checks_the_download_and_takes_a_local_release(tmp_path):
    """scripts/fetch_genia.py on a file:// URL (no network in the tests): a wrong SHA-256
    keeps nothing; the right one keeps the file; --local-dir copies without downloading."""
    import hashlib

    source = tmp_path / "GENIAcorpus3.02.tgz"
    source.write_bytes(b"release bytes")
    digest = hashlib.sha256(b"release bytes").hexdigest()
    script = [sys.executable, str(PROJECT / "scripts" / "fetch_genia.py")]
    out = tmp_path / "assets" / "GENIAcorpus3.02.source"
    bad = subprocess.run([*script, str(out), "--url", source.as_uri(), "--sha256", "0" * 64],
                         capture_output=True, text=True)
    assert bad.returncode != 0 and "expected" in bad.stderr and not out.exists()
    good = subprocess.run([*script, str(out), "--url", source.as_uri(), "--sha256", digest],
                          capture_output=True, text=True)
    assert good.returncode == 0 and out.read_bytes() == b"release bytes"
    out.unlink()
    local = subprocess.run([*script, str(out), "--local-dir", str(tmp_path)],
                           capture_output=True, text=True)
    assert local.returncode == 0 and out.read_bytes() == b"release bytes"
