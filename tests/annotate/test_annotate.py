"""Tests of ``annotate``: input formats, malformed lines, shards and manifest, resuming after
a crash and after ``kill -9``, job identity, int8 quantization, and the Ray engine on a local
instance."""

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pytest
import spacy
from helpers.annotate import (
    TEXTS,
    as_comparable,
    read_output,
    save_trained_pipeline,
    write_gold,
)
from helpers.pipes import TRAIN, make_examples
from spacy.tokens import DocBin

from spacy_nested_mrc.annotate import MANIFEST, AnnotateSettings, InputSpec, annotate_corpus
from spacy_nested_mrc.annotate import runner as runner_module
from spacy_nested_mrc.annotate.runner import in_input_order, sorted_in_buffers
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.encoder.quantization import is_quantized

# trains pipelines or starts processes: deselected by -m "not slow"
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def pipeline(tiny_bert, tmp_path_factory) -> Path:
    """A pipeline trained a few steps (it writes some spans), saved."""
    return save_trained_pipeline(tiny_bert, tmp_path_factory.mktemp("annotate") / "pipeline")


def write_jsonl_input(path: Path, n: int) -> list:
    """n documents as JSON Lines, with a bad line, a blank one, a list and a record without
    text among them. RETURNS: the (id, text) of the good ones, in order."""
    good, lines = [], []
    for i in range(n):
        text = TEXTS[i % len(TEXTS)]
        lines.append(json.dumps({"id": f"doc{i}", "text": text}))
        good.append((f"doc{i}", text))
        if i == 2:
            lines += ['{"id": "broken", "text": ', "", "[1, 2]", json.dumps({"id": "x"})]
    path.write_text("\n".join(lines) + "\n", encoding="utf8")
    return good


def expected_records(pipeline: Path, good: list) -> list:
    nlp = spacy.load(pipeline)
    out = []
    for (doc_id, _), doc in zip(good, nlp.pipe([text for _, text in good])):
        spans = sorted((s.start_char, s.end_char, s.label_) for s in doc.spans["nested"])
        out.append((doc_id, spans))
    return out


def test_annotate_jsonl_in_shards_with_malformed_lines(pipeline, tmp_path, capsys):
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 23)
    out = tmp_path / "out"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["annotate", str(pipeline), str(source), str(out), "--shard-size", "5",
                     "--no-progress"])
    assert code == 0
    problems = [str(w.message) for w in caught if "NMW130" in str(w.message)]
    # the bad JSON, the list and the record without text; the blank line is not malformed
    assert len(problems) == 3
    assert "line 4 of docs.jsonl" in problems[0] and "not JSON" in problems[0]
    assert "a JSON list" in problems[1] and "'text' is missing" in problems[2]
    records = read_output(out)
    assert as_comparable(records) == expected_records(pipeline, good)
    for record in records:
        for span in record["spans"]:
            assert record["text"][span["start_char"]:span["end_char"]] == span["text"]
            assert 0 <= span["score"] <= 1 and span["start"] < span["end"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["done"] and len(manifest["shards"]) == 5  # 23 documents, 5 a shard
    assert manifest["summary"]["documents"] == 23 and manifest["summary"]["skipped"] == 3
    assert manifest["summary"]["blank"] == 1
    assert "23 documents" in capsys.readouterr().out
    # run again: already complete, nothing written twice
    assert main(["annotate", str(pipeline), str(source), str(out), "--shard-size", "5",
                 "--no-progress"]) == 0
    assert as_comparable(read_output(out)) == expected_records(pipeline, good)


def test_sorted_buffers_come_back_in_input_order():
    items = [(text, k) for k, text in enumerate(["ccc", "a", "bb", "dddd", "e", "ff", ""])]
    given = list(sorted_in_buffers(iter(items), 3))
    assert [text for text, _ in given] == ["a", "bb", "ccc", "e", "ff", "dddd", ""]
    assert list(in_input_order(iter(given))) == items
    assert [text for text, _ in sorted_in_buffers(iter(items), 0)] == [t for t, _ in items]


def test_annotate_batches_by_length_and_writes_in_input_order(pipeline, tmp_path):
    """With a sort buffer (documents batched by length), the records, their ids and spans
    are those of input order, the scores the same to 1e-5."""
    source = tmp_path / "docs.jsonl"
    write_jsonl_input(source, 23)
    outputs = {}
    for size in (0, 8):
        settings = AnnotateSettings(batch_size=4, shard_size=10, sort_buffer=size)
        annotate_corpus(str(pipeline), InputSpec(str(source)), tmp_path / f"out{size}",
                        settings, progress=False)
        outputs[size] = read_output(tmp_path / f"out{size}")
    assert as_comparable(outputs[8]) == as_comparable(outputs[0])
    for a, b in zip(outputs[0], outputs[8]):
        assert [s["score"] for s in a["spans"]] == pytest.approx(
            [s["score"] for s in b["spans"]], abs=1e-5)


def test_annotate_text_folder_stdin_and_docbin(pipeline, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text("IL-2 gene expression\n\nJurkat cells express IL-2\n")
    (folder / "b.txt").write_text("human T cells bind\n")
    (folder / "notes.md").write_text("not an input file")
    summary = annotate_corpus(str(pipeline), InputSpec(str(folder)), tmp_path / "out",
                              AnnotateSettings(shard_size=2), progress=False)
    assert summary.documents == 3 and summary.blank == 1 and summary.shards == 2
    ids = [r["id"] for r in read_output(tmp_path / "out")]
    assert ids == ["a.txt:1", "a.txt:3", "b.txt:1"]  # line numbers, the blank one kept

    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline), "-",
         str(tmp_path / "stdin_out"), "--no-progress", "--write-ents", "--no-text"],
        input="IL-2 gene expression\nhuman T cells bind\n", capture_output=True, text=True,
    )
    assert result.returncode == 0, result.stderr
    records = read_output(tmp_path / "stdin_out")
    assert [r["id"] for r in records] == ["stdin:1", "stdin:2"]
    assert "text" not in records[0] and "ents" in records[0]

    nlp = spacy.load(pipeline)
    bin_ = DocBin(docs=[nlp.make_doc(t) for t in TEXTS[:3]])
    bin_.to_disk(tmp_path / "docs.spacy")
    annotate_corpus(str(pipeline), InputSpec(str(tmp_path / "docs.spacy")),
                    tmp_path / "bin_out", AnnotateSettings(output_format="spacy"),
                    progress=False)
    manifest = json.loads((tmp_path / "bin_out" / MANIFEST).read_text())
    docs = list(DocBin().from_disk(tmp_path / "bin_out" / manifest["shards"][0]["name"])
                .get_docs(nlp.vocab))
    assert [d.text for d in docs] == TEXTS[:3]
    assert [d.user_data["id"] for d in docs] == ["docs.spacy:1", "docs.spacy:2", "docs.spacy:3"]
    assert all("nested" in d.spans for d in docs)


def test_annotated_shards_train_a_pipeline(pipeline, tmp_path):
    """Self-training: the DocBin shards of an annotate job, read as a folder by the reader,
    are training examples whose gold spans are the spans the pipeline wrote."""
    from spacy_nested_mrc.corpora.jsonl import create_jsonl_reader

    (tmp_path / "in.txt").write_text("\n".join(TEXTS[:5]) + "\n", encoding="utf8")
    annotate_corpus(str(pipeline), InputSpec(str(tmp_path / "in.txt")), tmp_path / "silver",
                    AnnotateSettings(output_format="spacy", shard_size=2), progress=False)
    manifest = json.loads((tmp_path / "silver" / MANIFEST).read_text())
    assert len(manifest["shards"]) == 3
    nlp = spacy.load(pipeline)
    written = [(d.text, sorted((s.start_char, s.end_char, s.label_) for s in d.spans["nested"]))
               for shard in manifest["shards"]
               for d in DocBin().from_disk(tmp_path / "silver" / shard["name"]).get_docs(nlp.vocab)]
    examples = list(create_jsonl_reader(tmp_path / "silver")(nlp))
    read = [(eg.reference.text, sorted((s.start_char, s.end_char, s.label_)
                                       for s in eg.reference.spans["nested"]))
            for eg in examples]
    assert read == written and any(spans for _, spans in read)
    losses = nlp.update(examples, sgd=nlp.resume_training())
    assert losses["nested_mrc_ner"] > 0


def test_annotate_resumes_after_a_crash_without_losing_or_repeating(pipeline, tmp_path,
                                                                     monkeypatch):
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 30)
    out = tmp_path / "out"
    settings = AnnotateSettings(shard_size=4, batch_size=3)
    real = runner_module.iter_records

    def crashing(*args, **kwargs):
        for i, record in enumerate(real(*args, **kwargs)):
            if i == 17:
                raise KeyboardInterrupt("killed")
            yield record

    monkeypatch.setattr(runner_module, "iter_records", crashing)
    with pytest.raises(KeyboardInterrupt):
        annotate_corpus(str(pipeline), InputSpec(str(source)), out, settings, progress=False)
    partial = json.loads((out / MANIFEST).read_text())
    assert not partial["done"] and 0 < len(read_output(out)) < 30
    monkeypatch.setattr(runner_module, "iter_records", real)
    summary = annotate_corpus(str(pipeline), InputSpec(str(source)), out, settings,
                              progress=False)
    assert summary.resumed_at == partial["shards"][-1]["end"]
    assert as_comparable(read_output(out)) == expected_records(pipeline, good)
    assert summary.documents == 30 and summary.skipped == 3


def test_annotate_survives_kill_9(pipeline, tmp_path):
    """Killed with SIGKILL after its first commit, then run again with the same arguments:
    every document exactly once. (A stray shard of the killed run is written again.)"""
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 3000)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline), str(source),
            str(out), "--shard-size", "50", "--batch-size", "10", "--no-progress"]
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 120
    killed_at = None
    while time.time() < deadline and proc.poll() is None:
        manifest = out / MANIFEST
        if manifest.exists():
            state = json.loads(manifest.read_text())
            if len(state["shards"]) >= 2:
                os.kill(proc.pid, signal.SIGKILL)
                killed_at = len(state["shards"])
                break
        time.sleep(0.05)
    proc.wait()
    assert killed_at is not None, "the run ended before it could be killed: use more docs"
    assert not json.loads((out / MANIFEST).read_text())["done"]
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert "resumed after" in result.stdout
    records = read_output(out)
    assert [r["id"] for r in records] == [doc_id for doc_id, _ in good]
    assert not list(out.glob("*.tmp"))


def job_processes(parent: int) -> list:
    """The live processes whose parent is ``parent`` (from /proc; zombies are gone)."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == parent and fields[0] != "Z":
            found.append(int(stat.parent.name))
    return found


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
@pytest.mark.parametrize("n_process,sig", [(2, signal.SIGTERM)] * 4 + [
    (2, signal.SIGKILL), (1, signal.SIGTERM)], ids=[
        *(f"2-processes-SIGTERM-{k}" for k in range(4)), "2-processes-SIGKILL",
        "1-process-SIGTERM"])
def test_annotate_under_a_supervisors_signals(pipeline, tmp_path, n_process, sig):
    """A job's parent ended by SIGTERM or SIGKILL (what supervisors and ``timeout`` send)
    after its first commits: no worker of the job outlives it; SIGTERM ends the job as
    SIGINT does, within seconds (lock released, one line saying how to resume, exit code
    128 + 15; repeated, as the process once hung at exit on a queue to a stopped worker);
    the same command then finishes with every document exactly once."""
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 3000)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline), str(source),
            str(out), "--shard-size", "50", "--batch-size", "10", "--no-progress",
            "--n-process", str(n_process)]
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:  # a file, not a pipe: a surviving worker would hold a pipe open
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    deadline, workers = time.time() + 180, []
    while time.time() < deadline and proc.poll() is None:
        workers = job_processes(proc.pid) or workers
        manifest = out / MANIFEST
        if manifest.exists() and len(json.loads(manifest.read_text())["shards"]) >= 2:
            break
        time.sleep(0.05)
    assert proc.poll() is None, "the run ended before the signal: use more docs"
    assert len(workers) >= n_process - 1
    os.kill(proc.pid, sig)
    sent = time.time()
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the job did not exit within 30 s of the signal")
    assert time.time() - sent < 10, "the job took more than 10 s to exit"
    stderr = log.read_text()
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)], "workers outlived the job"
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + signal.SIGTERM, stderr[-2000:]
        assert not (out / "annotate.lock").exists()
        assert "Traceback" not in stderr
        # the stop's message, wherever it falls among other lines (a worker's warning from
        # spaCy can be written after it)
        stop = [line for line in stderr.splitlines() if "NME139" in line]
        assert stop, stderr[-2000:]
        assert "SIGTERM" in stop[-1] and "run the same command again" in stop[-1], stderr[-2000:]
    assert not json.loads((out / MANIFEST).read_text())["done"]
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["id"] for r in read_output(out)] == [doc_id for doc_id, _ in good]


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads processes from /proc")
def test_annotate_ends_when_a_worker_is_killed(pipeline, tmp_path):
    """A worker killed while the job runs (as the system kills one that runs out of
    memory): the job ends within seconds with NME192 (exit 1), its other worker gone, the
    lock released; the same command then finishes with every document exactly once. Before,
    the parent waited for good on the dead worker's pipe."""
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 3000)
    out = tmp_path / "out"
    args = [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline), str(source),
            str(out), "--shard-size", "50", "--batch-size", "10", "--no-progress",
            "--n-process", "2"]
    log = tmp_path / "stderr.txt"
    with log.open("w") as err:
        proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=err)
    deadline, workers = time.time() + 180, []
    while time.time() < deadline and proc.poll() is None:
        workers = job_processes(proc.pid) or workers
        manifest = out / MANIFEST
        if manifest.exists() and json.loads(manifest.read_text())["shards"] and workers:
            break
        time.sleep(0.05)
    assert proc.poll() is None and workers, "the run ended before the kill: use more docs"
    os.kill(workers[0], signal.SIGKILL)
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        proc.kill()
        pytest.fail("the job did not end after its worker was killed")
    stderr = log.read_text()
    assert proc.returncode == 1 and "NME192" in stderr and "SIGKILL" in stderr, stderr[-2000:]
    assert "Traceback" not in stderr
    deadline = time.time() + 10
    while time.time() < deadline and any(alive(pid) for pid in workers):
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)], "workers outlived the job"
    assert not (out / "annotate.lock").exists()
    result = subprocess.run(args, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    assert [r["id"] for r in read_output(out)] == [doc_id for doc_id, _ in good]


def test_annotate_refuses_another_jobs_folder(pipeline, tmp_path, capsys):
    source = tmp_path / "docs.txt"
    source.write_text("IL-2 gene expression\n")
    out = tmp_path / "out"
    assert main(["annotate", str(pipeline), str(source), str(out), "--no-progress"]) == 0
    code = main(["annotate", str(pipeline), str(source), str(out), "--write-ents",
                 "--no-progress"])
    assert code == 1 and "NME133" in capsys.readouterr().err
    assert main(["annotate", str(pipeline), str(source), str(out), "--write-ents",
                 "--overwrite", "--no-progress"]) == 0
    assert "ents" in read_output(out)[0]
    assert main(["annotate", str(pipeline), str(tmp_path / "missing.txt"), str(out)]) == 1
    assert "NME130" in capsys.readouterr().err
    assert main(["annotate", str(tmp_path / "nope"), str(source), str(tmp_path / "o2")]) == 1
    assert "NME042" in capsys.readouterr().err
    assert main(["annotate", str(pipeline), str(source), str(out), "--engine", "spark"]) == 1
    assert "NME006" in capsys.readouterr().err


def test_quantized_pipeline_predicts_saves_and_loads(pipeline, tmp_path):
    float_nlp = spacy.load(pipeline)
    nlp = spacy.load(pipeline, config={"components.nested_mrc_ner.quantize": "int8"})
    pipe = nlp.get_pipe("nested_mrc_ner")
    assert is_quantized(pipe.model) and not is_quantized(float_nlp.get_pipe("nested_mrc_ner").model)
    docs = list(nlp.pipe(TEXTS))
    float_docs = list(float_nlp.pipe(TEXTS))
    # int8 changes the scores a little, not which spans the tiny model is sure of
    for doc, ref in zip(docs, float_docs):
        sure = {(s.start, s.end, s.label_) for s, p in
                zip(ref.spans["nested"], ref.spans["nested"].attrs["scores"]) if p > 0.7}
        assert sure <= {(s.start, s.end, s.label_) for s in doc.spans["nested"]}
    nlp.to_disk(tmp_path / "int8")
    again = spacy.load(tmp_path / "int8")
    assert is_quantized(again.get_pipe("nested_mrc_ner").model)
    for doc, text in zip(docs, TEXTS):
        redo = again(text)
        assert [(s.start, s.end, s.label_) for s in redo.spans["nested"]] == [
            (s.start, s.end, s.label_) for s in doc.spans["nested"]
        ]
    examples = make_examples(again, TRAIN[:1])
    with pytest.raises(ValueError, match="NME141"):
        again.update(examples)
    with pytest.raises(ValueError, match="NME006"):
        spacy.load(pipeline, config={"components.nested_mrc_ner.quantize": "int4"})
    assert main(["predict", str(pipeline), TEXTS[0], "--quantize", "int8"]) == 0
    assert main(["evaluate", str(pipeline), str(write_gold(tmp_path)), "--quantize", "int8"]) == 0


def _kill_a_busy_actor(killed: list, deadline: float) -> None:
    """SIGKILL the first Ray Data actor process of the annotate pipeline seen running a task
    (its process title no longer ends in ``__init__``), once."""
    while time.time() < deadline and not killed:
        for pid in filter(str.isdigit, os.listdir("/proc")):
            try:
                title = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if "PipelineActor" in title and not title.strip().endswith("__init__"):
                os.kill(int(pid), signal.SIGKILL)
                killed.append(title.strip())
                return
        time.sleep(0.02)


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="finds the actor's process in /proc")
def test_ray_engine_keeps_every_document_once_when_an_actor_is_killed(pipeline, tmp_path):
    """Ray Data restarts a killed actor and retries its tasks (its defaults for actor pools);
    the driver's commit by input position keeps every document exactly once."""
    import threading

    ray = pytest.importorskip("ray", reason="the Ray engine is an extra: pip install .[ray]")
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 200)
    killed: list = []
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    watcher = threading.Thread(target=_kill_a_busy_actor, args=(killed, time.time() + 600),
                               daemon=True)
    watcher.start()
    try:
        summary = annotate_corpus(
            str(pipeline), InputSpec(str(source)), tmp_path / "ray_out",
            AnnotateSettings(shard_size=30, batch_size=1), engine="ray",
            engine_options={"concurrency": 2}, progress=False,
        )
    finally:
        killed.append("done")  # stops the watcher if it has not fired
        ray.shutdown()
    assert killed[0] != "done", "no actor was seen running a task"
    assert summary.documents == 200
    assert as_comparable(read_output(tmp_path / "ray_out")) == expected_records(pipeline, good)


def test_annotate_with_ray_matches_local(pipeline, tmp_path):
    ray = pytest.importorskip("ray", reason="the Ray engine is an extra: pip install .[ray]")
    source = tmp_path / "docs.jsonl"
    good = write_jsonl_input(source, 200)
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        summary = annotate_corpus(
            str(pipeline), InputSpec(str(source)), tmp_path / "ray_out",
            AnnotateSettings(shard_size=30, batch_size=16), engine="ray",
            engine_options={"concurrency": 2, "window": 90}, progress=False,
        )
    finally:
        ray.shutdown()
    assert summary.documents == 200 and summary.skipped == 3
    assert as_comparable(read_output(tmp_path / "ray_out")) == expected_records(pipeline, good)


@pytest.mark.parametrize("release_every,releases", [(4, 5), (0, 0)])
def test_annotate_gives_memory_back_every_n_documents(pipeline, tmp_path, monkeypatch,
                                                      release_every, releases):
    calls = []
    monkeypatch.setattr(
        "spacy_nested_mrc.runtime.memory.release_free_memory", lambda: calls.append(1) or True
    )
    source = tmp_path / "docs.jsonl"
    source.write_text("".join(json.dumps({"id": i, "text": TEXTS[i % len(TEXTS)]}) + "\n"
                              for i in range(21)))
    settings = AnnotateSettings(shard_size=8, release_every=release_every)
    summary = annotate_corpus(str(pipeline), InputSpec(str(source)), tmp_path / "out", settings,
                              progress=False)
    assert summary.documents == 21
    assert len(calls) == releases  # 21 documents, every 4th: 5
