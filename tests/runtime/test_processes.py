"""A job's process ends however the job ends (#55): a ``multiprocessing.Queue`` whose reader
is gone must not keep the process alive at exit."""
import signal
import subprocess
import sys
import textwrap
import time

import pytest

# a worker that never reads its queue, a put larger than any pipe holds (its feeder thread
# blocks writing it), then the job ends by SIGTERM or by an error; the time it is ready to end
# is written to a file, so that the package's import (seconds on a slow or busy machine) is
# not counted against its exit
JOB = textwrap.dedent("""
    import multiprocessing, os, signal, sys, time
    from spacy_nested_mrc.runtime.processes import job_processes, stop_signal_of

    def idle(queue):
        time.sleep(600)

    if __name__ == "__main__":
        how, ready = sys.argv[1], sys.argv[2]
        try:
            with job_processes():
                queue = multiprocessing.get_context("fork").Queue()
                worker = multiprocessing.get_context("fork").Process(target=idle, args=(queue,))
                worker.start()
                queue.put(b"x" * (8 << 20))
                time.sleep(0.5)
                with open(ready, "w") as file:
                    file.write(repr(time.time()))
                if how == "signal":
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(60)
                raise RuntimeError("a worker failed")
        except KeyboardInterrupt as err:
            sys.exit(128 + stop_signal_of(err))
        except RuntimeError:
            sys.exit(3)
""")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks workers")
@pytest.mark.parametrize("how,code", [("signal", 128 + signal.SIGTERM), ("error", 3)])
def test_a_stopped_job_exits_with_its_queues_unflushed(tmp_path, how, code):
    script, ready = tmp_path / "job.py", tmp_path / "ready"
    script.write_text(JOB)
    proc = subprocess.Popen([sys.executable, str(script), how, str(ready)],
                            stderr=subprocess.PIPE, text=True)
    try:
        # the import included; without the fix the process waits on its worker's 600 s
        _, stderr = proc.communicate(timeout=240)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        pytest.fail("the process did not exit: a queue's feeder thread was joined at exit")
    ended = time.time()
    assert proc.returncode == code, stderr[-2000:]
    assert ended - float(ready.read_text()) < 15
    assert "Traceback" not in stderr
