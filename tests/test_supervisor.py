"""``jaxagents train --distributed`` trains in a child process and reports the faults
the child cannot (``jaxagents.supervisor``); here with small Python children that
print what JAX would and end as JAX does. The real loss of process 0 between two
training processes is in tests/test_faults.py (slow)."""

import os
import signal
import sys
import threading
import time

from jaxagents import supervisor

GLOG_FATAL = (b"F1206 13:31:21.123456   4242 client.h:77] Terminating process because the JAX distributed service "
              b"detected fatal errors. This most likely indicates that another task died\n")
WARNING = b"W1206 13:31:20.000001   4242 some_file.cc:12] a warning a user should still see\n"


def _child(tmp_path, body: str) -> tuple[str, ...]:
    script = tmp_path / "child.py"
    script.write_text("import os, signal, sys, time\nout = sys.stderr.buffer\n" + body)
    return (sys.executable, str(script))


def test_the_loss_of_process_0_is_one_line_and_status_69(tmp_path, capfd):
    run = tmp_path / "run"
    (run / "checkpoints" / "10").mkdir(parents=True)
    (run / "checkpoints" / "20.orbax-checkpoint-tmp-1").mkdir()  # unfinished: not the last checkpoint
    body = ("print('training', flush=True)\nout.write(b'update 3\\n'); out.flush()\n"
            f"out.write({GLOG_FATAL!r} + b'*** Check failure stack trace: ***\\n    @     0x7f00 abort\\n'); out.flush()\n"
            "os.abort()\n")
    code = supervisor.run([], str(run), "process 1", command=_child(tmp_path, body))
    out, err = capfd.readouterr()
    assert code == supervisor.EXIT_PEER_LOST and out == "training\n"
    lines = err.splitlines()
    assert lines[0] == "update 3" and len(lines) == 2, err  # what came before the abort, then one line
    assert lines[1].startswith("jaxagents train: lost process 0 (the coordinator") and "stopped on process 1" in lines[1]
    assert f"the last checkpoint is {run / 'checkpoints' / '10'} (update 10)" in lines[1]
    assert f"`jaxagents train --resume {run}` with the same command on every process" in lines[1]
    kept = lines[1].split("JAX's own report: ")[1].rstrip(")")
    try:
        assert open(kept, "rb").read().startswith(GLOG_FATAL)  # nothing of JAX's report is lost
    finally:
        os.unlink(kept)


def test_other_endings_pass_through(tmp_path, capfd):
    """The child's own status and every line, in order: a native warning is only held
    back for a moment, and shown when the child goes on."""
    body = (f"out.write({WARNING!r}); out.flush(); time.sleep({supervisor.HOLD_S + 1})\n"
            "out.write(b'progress 50%\\r'); out.flush(); out.write(b'done\\n')\nsys.exit(75)\n")
    assert supervisor.run([], None, "process 0", command=_child(tmp_path, body)) == 75
    assert capfd.readouterr().err == (WARNING + b"progress 50%\rdone\n").decode()


def test_a_killed_child_is_one_line_after_what_it_wrote(tmp_path, capfd):
    body = f"out.write({WARNING!r}); out.flush()\nos.kill(os.getpid(), signal.SIGKILL)\n"
    assert supervisor.run([], str(tmp_path / "none"), "process 0", command=_child(tmp_path, body)) == 128 + 9
    err = capfd.readouterr().err.splitlines()
    assert err[0] == WARNING.decode().strip() and len(err) == 2
    assert err[1].startswith("jaxagents train: the training process of process 0 was ended by SIGKILL; "
                             "no checkpoint was written yet")


def test_signals_reach_the_child_once(tmp_path, capfd):
    """A SIGTERM to the parent is forwarded to the child (in its own session: the
    terminal's signals reach the parent alone)."""
    ready = tmp_path / "ready"
    body = (f"got = []\nsignal.signal(signal.SIGTERM, lambda s, f: got.append(s))\nopen({str(ready)!r}, 'w').close()\n"
            "deadline = time.time() + 30\nwhile not got and time.time() < deadline: time.sleep(0.01)\n"
            "time.sleep(0.5)\nprint(len(got), os.getsid(0) == os.getpid(), flush=True)\nsys.exit(75 if got else 3)\n")

    def send():
        deadline = time.time() + 30
        while not ready.exists() and time.time() < deadline:
            time.sleep(0.01)
        os.kill(os.getpid(), signal.SIGTERM)

    before = signal.getsignal(signal.SIGTERM)
    threading.Thread(target=send, daemon=True).start()
    assert supervisor.run([], None, "process 0", command=_child(tmp_path, body)) == 75
    assert capfd.readouterr().out == "1 True\n"
    assert signal.getsignal(signal.SIGTERM) is before  # the parent's own handling is back


def test_a_signal_delivered_twice_at_once_is_one_notice(monkeypatch):
    """A scheduler that signals every process of the job reaches the child directly and
    through the parent: within a second that is one request, not "stop at once"."""
    from jaxagents import preemption

    monkeypatch.setattr(preemption, "_SUPERVISED", True)
    p = preemption.Preemption(announce=False)
    at_once = []
    p.exit_now = at_once.append
    p.on_signal(signal.SIGTERM)
    p.on_signal(signal.SIGTERM)
    assert p.requested_code == signal.SIGTERM and not at_once
    p._last = (signal.SIGTERM, time.monotonic() - preemption.DUPLICATE_S)  # a second later: the user's second signal
    p.on_signal(signal.SIGTERM)
    assert at_once == [signal.SIGTERM]
    monkeypatch.setattr(preemption, "_SUPERVISED", False)  # unsupervised, every signal counts
    q = preemption.Preemption(announce=False)
    q.exit_now = at_once.append
    q.on_signal(signal.SIGTERM)
    q.on_signal(signal.SIGTERM)
    assert at_once == [signal.SIGTERM, signal.SIGTERM]
