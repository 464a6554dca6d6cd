"""``annotate`` on input that used to stop or confuse a job: documents over the pipeline's
``max_length``, bytes that are not UTF-8 (file and stdin), an output folder inside the
input, two jobs on one folder and a stale lock, odd ids, file names and links. Every test
checks that the output holds each valid input document exactly once."""

import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import spacy
from helpers.annotate import TEXTS, as_comparable, read_output, save_trained_pipeline
from hypothesis import given, settings
from hypothesis import strategies as st

from spacy_nested_mrc import SAMPLE_DIR
from spacy_nested_mrc.annotate import MANIFEST
from spacy_nested_mrc.annotate.outputs import LOCK, OutputLock
from spacy_nested_mrc.cli import main
from spacy_nested_mrc.inputs import split_text


@pytest.fixture(scope="module")
def pipeline(tiny_bert, tmp_path_factory) -> Path:
    return save_trained_pipeline(tiny_bert, tmp_path_factory.mktemp("odd_input") / "pipeline")


def annotate(*args: str) -> tuple:
    """Run the CLI without a progress bar. RETURNS (Tuple[int, List[str]]): the exit code and
    the messages of the warnings it gave."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code = main(["annotate", *map(str, args), "--no-progress"])
    return code, [str(w.message) for w in caught]


def spans_of(nlp, text: str, offset: int = 0) -> list:
    doc = nlp(text)
    return sorted((s.start_char + offset, s.end_char + offset, s.label_)
                  for s in doc.spans["nested"])


def expected(pipeline: Path, docs: list) -> list:
    """(id, spans) of each (id, text), each text annotated alone."""
    nlp = spacy.load(pipeline)
    return [(doc_id, spans_of(nlp, text)) for doc_id, text in docs]


def summary(out: Path) -> dict:
    return json.loads((out / MANIFEST).read_text())["summary"]


def write_lines(path: Path, records: list) -> list:
    """JSON Lines of (id, text). RETURNS: the records."""
    path.write_text("".join(json.dumps({"id": i, "text": t}) + "\n" for i, t in records))
    return records


# long documents


@settings(max_examples=200, deadline=None)
@given(text=st.text(alphabet=st.sampled_from("ab .\n\t?é"), max_size=300),
       limit=st.integers(1, 40))
def test_split_text_pieces_join_to_the_text_and_fit(text, limit):
    pieces = split_text(text, limit)
    assert "".join(pieces) == text
    assert all(len(p) <= limit for p in pieces)
    assert all(pieces[:-1])


def test_split_text_prefers_paragraphs_then_lines_then_sentences():
    text = "a b c. d e\nf g. h\n\ni j k. l m n"
    assert split_text(text, 20) == ["a b c. d e\nf g. h\n\n", "i j k. l m n"]
    assert split_text("a b c d. e f g h", 12) == ["a b c d. ", "e f g h"]
    assert split_text("abcdefghij", 4) == ["abcd", "efgh", "ij"]


def long_text(n_chars: int) -> str:
    parts, size, i = [], 0, 0
    while size < n_chars:
        part = TEXTS[i % len(TEXTS)] + (" .\n" if i % 3 == 2 else " . ")
        parts.append(part)
        size += len(part)
        i += 1
    return "".join(parts)


def test_document_over_max_length_is_annotated_in_pieces(pipeline, tmp_path):
    text = long_text(1200)
    docs = write_lines(tmp_path / "in.jsonl", [("short", TEXTS[0]), ("long", text),
                                               ("after", TEXTS[1])])
    out = tmp_path / "out"
    code, warned = annotate(pipeline, tmp_path / "in.jsonl", out, "--max-length", 300)
    assert code == 0
    assert any("NMW132" in w and "Line 2 of in.jsonl" in w for w in warned)
    records = read_output(out)
    assert [r["id"] for r in records] == ["short", "long", "after"]
    assert records[1]["text"] == text
    # each piece annotated alone, its spans moved to its place in the whole
    nlp = spacy.load(pipeline)
    pieces, offset, whole = split_text(text, 300), 0, []
    for piece in pieces:
        whole += spans_of(nlp, piece, offset)
        offset += len(piece)
    assert len(pieces) >= 4
    got = as_comparable(records)
    assert got[1] == ("long", sorted(whole)) and whole
    assert [got[0], got[2]] == expected(pipeline, [docs[0], docs[2]])
    for span in records[1]["spans"]:
        assert text[span["start_char"]:span["end_char"]] == span["text"]
    assert summary(out)["problems"] == {"too_long": 1}
    assert f"annotated in {len(pieces)} pieces" in summary(out)["notes"][0]["detail"]


def test_document_over_max_length_is_skipped_on_request(pipeline, tmp_path, capsys):
    docs = write_lines(tmp_path / "in.jsonl", [("a", TEXTS[0]), ("long", long_text(500)),
                                               ("b", TEXTS[1])])
    out = tmp_path / "out"
    code, warned = annotate(pipeline, tmp_path / "in.jsonl", out, "--max-length", 300,
                            "--long-docs", "skip")
    assert code == 0 and any("NMW132" in w for w in warned)
    assert as_comparable(read_output(out)) == expected(pipeline, [docs[0], docs[2]])
    assert summary(out)["skipped"] == 1 and summary(out)["problems"] == {"too_long": 1}
    assert "in.jsonl:2 (id 'long')" in capsys.readouterr().out


@pytest.mark.slow
def test_a_line_of_1_5_mb_at_the_default_max_length(pipeline, tmp_path):
    text = long_text(1_500_000)
    write_lines(tmp_path / "in.jsonl", [("big", text), ("small", TEXTS[0])])
    out = tmp_path / "out"
    code, _ = annotate(pipeline, tmp_path / "in.jsonl", out, "--batch-size", 8)
    assert code == 0
    records = read_output(out)
    assert [r["id"] for r in records] == ["big", "small"]
    assert records[0]["text"] == text and records[0]["spans"]
    assert summary(out)["problems"] == {"too_long": 1}
    assert "annotated in 2 pieces" in summary(out)["notes"][0]["detail"]


# bytes that are not UTF-8


BAD = "IL-2 gene in caf\udce9 cells".encode("utf8", "surrogateescape")  # a lone 0xE9


def test_bad_bytes_in_a_file_are_replaced_and_listed(pipeline, tmp_path):
    source = tmp_path / "in.txt"
    source.write_bytes(TEXTS[0].encode() + b"\n" + BAD + b"\n" + TEXTS[1].encode() + b"\n")
    out = tmp_path / "out"
    code, warned = annotate(pipeline, source, out)
    assert code == 0
    assert any("NMW131" in w and "Line 2 of in.txt" in w for w in warned)
    replaced = BAD.decode("utf8", "replace")
    assert as_comparable(read_output(out)) == expected(
        pipeline, [("in.txt:1", TEXTS[0]), ("in.txt:2", replaced), ("in.txt:3", TEXTS[1])])
    assert summary(out)["problems"] == {"undecodable": 1}
    skip_out = tmp_path / "skip"
    assert annotate(pipeline, source, skip_out, "--encoding-errors", "skip")[0] == 0
    assert [r["id"] for r in read_output(skip_out)] == ["in.txt:1", "in.txt:3"]
    assert summary(skip_out)["skipped"] == 1


@pytest.mark.parametrize("kind", ["txt", "jsonl"])
def test_a_byte_order_mark_is_read_as_such(pipeline, tmp_path, kind):
    """A file that starts with a UTF-8 byte-order mark (as some editors write): its first
    document is read whole, without the mark, in text and JSON Lines input alike."""
    source = tmp_path / f"in.{kind}"
    if kind == "txt":
        source.write_bytes(b"\xef\xbb\xbf" + (TEXTS[0] + "\n" + TEXTS[1] + "\n").encode())
        ids = ["in.txt:1", "in.txt:2"]
    else:
        lines = "".join(json.dumps({"id": i, "text": t}) + "\n"
                        for i, t in (("a", TEXTS[0]), ("b", TEXTS[1])))
        source.write_bytes(b"\xef\xbb\xbf" + lines.encode())
        ids = ["a", "b"]
    out = tmp_path / "out"
    code, warned = annotate(pipeline, source, out)
    assert code == 0 and not [w for w in warned if "NMW13" in w]
    records = read_output(out)
    assert [r["text"] for r in records] == TEXTS[:2]
    assert as_comparable(records) == expected(pipeline, list(zip(ids, TEXTS[:2])))


@pytest.mark.slow
def test_bad_bytes_on_stdin_as_in_a_file(pipeline, tmp_path):
    data = TEXTS[0].encode() + b"\n" + BAD + b"\n"
    out = tmp_path / "out"
    result = subprocess.run(
        [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline), "-", str(out),
         "--no-progress"], input=data, capture_output=True, timeout=600)
    assert result.returncode == 0, result.stderr.decode()[-2000:]
    assert b"NMW131" in result.stderr and b"Line 2 of stdin" in result.stderr
    assert as_comparable(read_output(out)) == expected(
        pipeline, [("stdin:1", TEXTS[0]), ("stdin:2", BAD.decode("utf8", "replace"))])
    assert b"1 undecodable" in result.stdout


# where the output goes


def test_output_inside_the_input_is_refused(pipeline, tmp_path, capsys):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text(TEXTS[0] + "\n")
    for out in (folder, folder / "out"):
        assert annotate(pipeline, folder, out)[0] == 1
        assert "NME120" in capsys.readouterr().err
        assert not (out / MANIFEST).exists()
    # an input file inside the output folder
    assert annotate(pipeline, folder / "a.txt", folder)[0] == 1
    assert "NME120" in capsys.readouterr().err
    assert annotate(pipeline, folder, tmp_path / "out")[0] == 0
    assert len(read_output(tmp_path / "out")) == 1


def test_a_folder_held_by_a_running_job_is_refused(pipeline, tmp_path, capsys):
    source = tmp_path / "in.txt"
    source.write_text(TEXTS[0] + "\n")
    out = tmp_path / "out"
    with OutputLock(out):  # this process, alive, holds it
        assert annotate(pipeline, source, out)[0] == 1
        assert "NME121" in capsys.readouterr().err
        assert not (out / MANIFEST).exists()
    assert not (out / LOCK).exists()
    assert annotate(pipeline, source, out)[0] == 0
    assert not (out / LOCK).exists() and len(read_output(out)) == 1


def test_a_stale_lock_is_taken_over(pipeline, tmp_path):
    source = tmp_path / "in.txt"
    source.write_text(TEXTS[0] + "\n")
    out = tmp_path / "out"
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    out.mkdir()
    (out / LOCK).write_text(json.dumps({"pid": gone.pid, "host": os.uname().nodename}))
    code, warned = annotate(pipeline, source, out)
    assert code == 0 and any("NMW135" in w for w in warned)
    assert not (out / LOCK).exists() and len(read_output(out)) == 1


@pytest.mark.parametrize("content", ["", "{\"pid\": ", "[1, 2]"],
                         ids=["empty", "cut", "not-a-holder"])
def test_an_empty_or_unreadable_lock_is_taken_over(pipeline, tmp_path, content):
    """A lock that names no holder (left by an older version, or a damaged disk) blocks no
    one: it is taken over with a warning."""
    source = tmp_path / "in.txt"
    source.write_text(TEXTS[0] + "\n")
    out = tmp_path / "out"
    out.mkdir()
    (out / LOCK).write_text(content)
    code, warned = annotate(pipeline, source, out)
    assert code == 0 and any("NMW137" in w for w in warned)
    assert not (out / LOCK).exists() and len(read_output(out)) == 1


def test_the_lock_appears_whole(tmp_path, monkeypatch):
    """The holder is written before the lock's name exists: a write that fails leaves no
    lock (so no later job is refused by an empty one), with a coded error."""
    import errno

    real_fsync = os.fsync

    def full_disk(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full_disk)
    with pytest.raises(OSError, match="NME190"):
        with OutputLock(tmp_path / "out"):
            pass
    assert not (tmp_path / "out" / LOCK).exists()
    assert not list((tmp_path / "out").glob("*.tmp"))
    monkeypatch.setattr(os, "fsync", real_fsync)
    with OutputLock(tmp_path / "out"):
        assert json.loads((tmp_path / "out" / LOCK).read_text())["pid"] == os.getpid()


# a small file system of its own, in a user and mount namespace (no root needed where the
# kernel allows unprivileged user namespaces)
DISK_SCRIPT = """
set -u
mount -t tmpfs -o size=2m tmpfs "$DISK" || exit 99
run() {{ {python} -m spacy_nested_mrc annotate "$PIPELINE" "$SOURCE" "$DISK/out" \
    --shard-size 50 --batch-size 25 --no-progress >/dev/null 2>"$LOGS/$1.err"
    echo $? > "$LOGS/$1.rc"; }}
conv() {{ {python} -m spacy_nested_mrc convert "$SAMPLE" "$DISK/train.spacy" --no-progress \
    >/dev/null 2>"$LOGS/$1.err"; echo $? > "$LOGS/$1.rc"; }}
head -c 2000000 /dev/zero > "$DISK/filler" 2>/dev/null
run full_at_start
conv convert_full
rm "$DISK/filler"; head -c 1800000 /dev/zero > "$DISK/filler"
run full_mid_job
ls "$DISK/out" > "$LOGS/mid_job.files"
rm "$DISK/filler"
run resumed
cp -r "$DISK/out" "$LOGS/out"
mount -o remount,ro "$DISK"
run read_only
conv convert_read_only
"""


@pytest.mark.slow
def test_a_full_disk_and_a_read_only_output(pipeline, tmp_path):
    """annotate (and convert) on a file system that is full at the start, fills mid-job,
    then has room again, then is read-only: coded errors naming the path and the remedy
    (never a traceback), no lock left behind, and the resumed job holds every document
    once."""
    import shutil

    if shutil.which("unshare") is None:
        pytest.skip("needs unshare(1) to mount a small file system of its own")
    docs = write_lines(tmp_path / "in.jsonl", [(f"d{i}", TEXTS[i % len(TEXTS)] * 3)
                                               for i in range(3000)])
    disk, logs = tmp_path / "disk", tmp_path / "logs"
    disk.mkdir()
    logs.mkdir()
    env = dict(os.environ, DISK=str(disk), LOGS=str(logs), PIPELINE=str(pipeline),
               SOURCE=str(tmp_path / "in.jsonl"), SAMPLE=str(SAMPLE_DIR / "train.jsonl"))
    result = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
         DISK_SCRIPT.format(python=sys.executable)], env=env, capture_output=True, text=True)
    if result.returncode == 99 or not (logs / "full_at_start.rc").exists():
        pytest.skip(f"cannot mount a file system here: {result.stderr.strip()[-300:]}")

    def outcome(step):
        return int((logs / f"{step}.rc").read_text()), (logs / f"{step}.err").read_text()

    for step, code, path in (("full_at_start", "NME190", "out"), ("full_mid_job", "NME190", "out"),
                             ("read_only", "NME191", "out"), ("convert_full", "NME190", "train"),
                             ("convert_read_only", "NME191", "train")):
        rc, err = outcome(step)
        assert rc == 1 and code in err and "Traceback" not in err, (step, err[-2000:])
        assert str(disk / path) in err
    assert LOCK not in (logs / "mid_job.files").read_text().split()
    rc, err = outcome("resumed")
    assert rc == 0, err[-2000:]
    records = read_output(logs / "out")
    assert len(records) == len(docs) and [r["id"] for r in records] == [d for d, _ in docs]
    assert not (logs / "out" / LOCK).exists()


@pytest.mark.slow
def test_two_jobs_started_together_on_one_folder(pipeline, tmp_path):
    docs = write_lines(tmp_path / "in.jsonl", [(f"d{i}", TEXTS[i % len(TEXTS)])
                                               for i in range(200)])
    out = tmp_path / "out"
    command = [sys.executable, "-m", "spacy_nested_mrc", "annotate", str(pipeline),
               str(tmp_path / "in.jsonl"), str(out), "--no-progress", "--shard-size", "20"]
    jobs = [subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            for _ in range(2)]
    results = [(job.wait(timeout=600), job.stderr.read().decode()) for job in jobs]
    for code, err in results:
        assert "Traceback" not in err, err[-2000:]
        assert code == 0 or (code == 1 and "NME121" in err), err[-2000:]
    assert any(code == 0 for code, _ in results)
    assert as_comparable(read_output(out)) == expected(pipeline, docs)
    assert not (out / LOCK).exists() and not list(out.glob("*.tmp"))


# ids, file names and links


def test_odd_ids_are_converted_or_reported(pipeline, tmp_path, capsys):
    source = tmp_path / "in.jsonl"
    lines = [{"id": 7, "text": TEXTS[0]}, {"id": {"x": 1}, "text": TEXTS[1]},
             {"id": "7", "text": TEXTS[2]}, {"id": None, "text": TEXTS[3]},
             {"id": "n", "text": None}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    out = tmp_path / "out"
    code, warned = annotate(pipeline, source, out)
    assert code == 0
    assert any("NMW133" in w and "Line 2 of in.jsonl" in w for w in warned)
    assert any("NMW134" in w and "Line 3 of in.jsonl" in w for w in warned)
    assert any("NMW130" in w and "'text' is null" in w for w in warned)
    assert as_comparable(read_output(out)) == expected(pipeline, [
        ("7", TEXTS[0]), ('{"x": 1}', TEXTS[1]), ("7", TEXTS[2]), ("in.jsonl:4", TEXTS[3])])
    assert summary(out)["problems"] == {"id_converted": 1, "duplicate_id": 1, "malformed": 1}
    printed = capsys.readouterr().out
    assert "in.jsonl:3 (id '7'): the id '7' is also that of in.jsonl:1" in printed


def test_folder_reads_known_suffixes_and_each_file_once(pipeline, tmp_path):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "a.txt").write_text(TEXTS[0] + "\n")
    (folder / "b.json").write_text(json.dumps([{"text": "not JSON Lines"}]))
    (folder / "c.txt").symlink_to(folder / "a.txt")
    out = tmp_path / "out"
    code, warned = annotate(pipeline, folder, out)
    assert code == 0 and any("NMW136" in w and "c.txt" in w for w in warned)
    assert as_comparable(read_output(out)) == expected(pipeline, [("a.txt:1", TEXTS[0])])
