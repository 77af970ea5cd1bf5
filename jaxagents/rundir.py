"""Run directories: naming a new one, refusing to clobber an old one, laying one out.

A run directory holds ``config.yaml``, ``metrics.jsonl``, ``checkpoints/``,
``curve.png`` and ``results.json`` (populations add ``population.jsonl``,
``members.json``, ``hparams.png`` and ``lineage.png``). A new run never writes into
a directory that holds anything: ``--resume`` continues a run, ``--overwrite``
deletes one first (and only a run). With several processes only process 0 lays the
directory out (``primary``).

**One owner.** A run directory belongs to one run at a time: ``RunLock`` takes
``<run_dir>/.jaxagents.lock`` atomically when a run starts or resumes and removes it
when the run ends. The file names its holder (host, pid, start time) and the holder
keeps an ``flock`` on it, which the kernel (or an NFS server) drops when the holder
dies, so a lock left by a killed run is recognised as stale, named, and taken over,
while a second run into a directory in use is refused at once. With several
processes only process 0 holds it, for the run as a whole.
"""

from __future__ import annotations

import datetime
import errno
import os
import shutil
import socket
import tempfile
import time

import jax
import yaml

from jaxagents import tracking

def default_run_dir(config: dict) -> str:
    """``runs/<learner>-<env>-<time>`` (``-2``, ``-3``... when that exists already)."""
    stamp = datetime.datetime.now().strftime("%Y%m%d-%H%M%S")
    env_id = config["env"]["id"].replace(":", "-").replace("/", "-")
    base = os.path.join("runs", f"{config['learner']}-{env_id}-{stamp}")
    path, i = base, 1
    while os.path.exists(path):
        i += 1
        path = f"{base}-{i}"
    return path


def is_run_dir(path: str) -> bool:
    """Whether ``path`` holds a run: a ``config.yaml``, ``metrics.jsonl`` or ``checkpoints``."""
    return any(os.path.exists(os.path.join(path, f)) for f in ("config.yaml", "metrics.jsonl", "checkpoints"))


LOCK = ".jaxagents.lock"


def _contents(path: str) -> list[str]:
    """The entries of a directory other than a run lock (and its temporary files)."""
    return [e for e in os.listdir(path) if not e.startswith(LOCK)]


def writable_ancestor(path: str) -> str | None:
    """The nearest existing directory at or above ``path`` if it is not writable."""
    p = os.path.abspath(path)
    while not os.path.exists(p):
        p = os.path.dirname(p)
    return None if os.access(p, os.W_OK) else p


def check_new_run_dir(run_dir: str, overwrite: bool = False) -> None:
    """Raise unless a new run may be written to ``run_dir`` (nothing is written)."""
    if os.path.exists(run_dir) and not os.path.isdir(run_dir):
        raise ValueError(f"run directory {run_dir!r} is a file, not a directory: choose another --run-dir")
    if os.path.isdir(run_dir) and _contents(run_dir):
        if not overwrite:
            what = "holds a run" if is_run_dir(run_dir) else "is not empty"
            raise ValueError(
                f"run directory {run_dir!r} {what}: continue it with `jaxagents train --resume {run_dir}`, "
                f"choose another --run-dir, or pass --overwrite to delete it and start again"
            )
        if not is_run_dir(run_dir):
            raise ValueError(f"--overwrite deletes only a run directory (one with config.yaml); {run_dir!r} holds other files")
    bad = writable_ancestor(run_dir)
    if bad is not None:
        raise ValueError(f"cannot write run directory {run_dir!r}: {bad!r} is not writable")


def lay_out(run_dir: str, config: dict, overwrite: bool) -> None:
    """Create the run directory (emptied first with ``overwrite``) and its config.yaml."""
    try:
        if overwrite and os.path.isdir(run_dir):
            for entry in _contents(run_dir):  # the lock of this run stays
                path = os.path.join(run_dir, entry)
                if os.path.isdir(path) and not os.path.islink(path):
                    shutil.rmtree(path)
                else:
                    os.remove(path)
        os.makedirs(run_dir, exist_ok=True)
        tracking.atomic_write(os.path.join(run_dir, "config.yaml"), yaml.safe_dump(config, sort_keys=False))
    except OSError as e:
        raise ValueError(f"cannot write run directory {run_dir!r}: {e.strerror or e}") from None


def primary() -> bool:
    """Whether this process writes the run's logs, tables and plots (process 0)."""
    return jax.process_index() == 0


# ----------------------------------------------------------------------- the lock


class RunDirInUse(ValueError):
    """Another live run holds the run directory."""


def _describe(text: str) -> dict:
    """``{"host", "pid", "since"}`` from a lock file's one line (missing: ``"?"``)."""
    out = {"host": "?", "pid": "?", "since": "?"}
    for part in text.split():
        k, _, v = part.partition("=")
        if k in out and v:
            out[k] = v
    return out


def _read(path: str, fd: int | None = None) -> dict:
    # a holder writes its line before the file appears under the lock's name (link),
    # so an empty read is a file system without hard links; wait a moment for the line
    for _ in range(20):
        try:
            if fd is not None:
                text = os.pread(fd, 4096, 0).decode(errors="replace")
            else:
                with open(path) as f:
                    text = f.read()
        except OSError:
            text = ""
        if text.strip():
            return _describe(text)
        time.sleep(0.05)
    return _describe("")


def _flock(fd: int) -> bool | None:
    """Try an exclusive ``flock`` without waiting: True taken, False held by another
    process, None where the file system has no locks."""
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError as e:
        if e.errno in (errno.ENOLCK, errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            return None
        raise


def _pid_alive(pid: str) -> bool:
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except (PermissionError, ValueError, OverflowError):
        return True  # someone else's process (or an unreadable pid): assume it runs
    return True


class RunLock:
    """Exclusive ownership of a run directory (see the module docstring).

    ``RunLock.acquire(run_dir, create)`` returns the lock or raises ``RunDirInUse``
    (one line naming the holder's host and pid); ``release()`` removes it, and the
    directory too (and the folders above it) when this lock made it and nothing else
    was written there.
    ``stale`` names a dead holder whose lock was taken over (None otherwise).
    """

    def __init__(self, run_dir: str, fd: int, created: list[str], stale: dict | None):
        self.run_dir, self.fd, self.created, self.stale = run_dir, fd, created, stale
        self.path = os.path.join(run_dir, LOCK)

    @classmethod
    def acquire(cls, run_dir: str, create: bool = True) -> "RunLock":
        """Take ``<run_dir>/.jaxagents.lock``, making ``run_dir`` (and missing folders above
        it) first when ``create``. A lock whose holder is dead is taken over (``stale``
        then names it). Raises ``RunDirInUse`` when a live run holds it, ``ValueError``
        when the directory cannot be written."""
        created = []  # the folders this lock made, deepest first (removed again if left empty)
        if create and not os.path.isdir(run_dir):
            missing, p = [], os.path.abspath(run_dir)
            while not os.path.exists(p):
                missing.append(p)
                p = os.path.dirname(p)
            try:
                for folder in reversed(missing[1:]):
                    os.makedirs(folder, exist_ok=True)
                    created.insert(0, folder)
                os.mkdir(run_dir)
                created.insert(0, os.path.abspath(run_dir))
            except FileExistsError:  # a racing run made it first: the lock decides
                pass
            except OSError as e:
                raise ValueError(f"cannot write run directory {run_dir!r}: {e.strerror or e}") from None
        path = os.path.join(run_dir, LOCK)
        line = (f"host={socket.gethostname()} pid={os.getpid()} "
                f"since={datetime.datetime.now().isoformat(timespec='seconds')}\n")
        stale, stale_fd = None, None
        try:
            for _ in range(100):
                # our candidate: a file that names us and that we lock before it takes the
                # lock's name, so that the lock is never seen unlocked or empty
                try:
                    fd, tmp = tempfile.mkstemp(prefix=LOCK + ".", dir=run_dir)
                except FileNotFoundError:
                    if not create:
                        raise ValueError(f"run directory {run_dir!r} no longer exists") from None
                    try:  # a racing run that made it gave up and removed it
                        os.mkdir(run_dir)
                        created.insert(0, os.path.abspath(run_dir))
                    except FileExistsError:
                        pass
                    continue
                except OSError as e:
                    raise ValueError(f"cannot write run directory {run_dir!r}: {e.strerror or e}") from None
                try:
                    os.fchmod(fd, 0o644)  # others may read who holds it
                    os.write(fd, line.encode())
                    locks = _flock(fd) is not None
                    try:
                        os.link(tmp, path)
                        return cls(run_dir, fd, created, stale)
                    except FileExistsError:
                        pass
                    except OSError as e:  # no hard links here: exclusive creation instead
                        if e.errno not in (errno.EPERM, errno.EOPNOTSUPP, errno.ENOSYS, errno.EXDEV):
                            raise
                        try:
                            excl = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
                        except FileExistsError:
                            pass
                        else:
                            os.close(fd)
                            fd = excl
                            if locks:
                                _flock(fd)
                            os.write(fd, line.encode())
                            return cls(run_dir, fd, created, stale)
                    os.close(fd)
                finally:
                    os.remove(tmp)
                if stale_fd is not None:
                    os.close(stale_fd)
                    stale_fd = None
                # the lock exists: is its holder alive?
                try:
                    other = os.open(path, os.O_RDONLY)
                except FileNotFoundError:
                    continue  # released meanwhile: try again
                got = _flock(other)
                try:
                    same = os.fstat(other).st_ino == os.stat(path).st_ino
                except FileNotFoundError:
                    same = False
                if not same:  # the file we opened was removed meanwhile (released, taken over): look again
                    os.close(other)
                    continue
                holder = _read(path, other)
                if got is False or (got is None and not cls._dead(holder)):
                    os.close(other)
                    raise RunDirInUse(
                        f"run directory {run_dir!r} is in use by another run (host {holder['host']}, pid {holder['pid']}, "
                        f"since {holder['since']}): wait for it to finish or stop it, or choose another --run-dir"
                        + ("" if holder["host"] == socket.gethostname() else f" (if that run is gone, delete {path})")
                    )
                # its holder is dead: we hold its flock, so no one else takes it over now
                stale = holder
                os.remove(path)
                stale_fd = other  # closed once ours is in place (a waiter then sees the new file)
            raise RunDirInUse(f"run directory {run_dir!r}: could not take {path} (runs keep racing for it)")
        finally:
            if stale_fd is not None:
                os.close(stale_fd)

    @staticmethod
    def _dead(holder: dict) -> bool:
        # without file locks: only a process of this host can be known to be gone
        return holder["host"] == socket.gethostname() and not _pid_alive(holder["pid"])

    def stale_message(self) -> str | None:
        """One line naming the dead holder whose lock was taken over, or None."""
        if self.stale is None:
            return None
        return (f"run directory {self.run_dir!r} was locked by host {self.stale['host']}, pid {self.stale['pid']} "
                f"(since {self.stale['since']}), which is no longer running: lock taken over")

    def release(self) -> None:
        """Remove the lock (before unlocking it, so no one takes a lock being removed)."""
        if self.fd is None:
            return
        try:
            os.remove(self.path)
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None
        for folder in self.created:  # only when empty: a run refused before writing anything
            try:
                os.rmdir(folder)
            except OSError:
                break

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.release()


# ----------------------------------------------------------------------- the watch

GONE, REPLACED, EMPTIED, UNWRITABLE, NO_CHECKPOINTS = 1, 2, 3, 4, 5
_PROBLEMS = {GONE: "was removed", REPLACED: "was replaced by another directory",
             EMPTIED: "lost its config.yaml (emptied?)", UNWRITABLE: "was made unwritable",
             NO_CHECKPOINTS: "lost its checkpoints/ folder"}


class RunDirGone(OSError):
    """The run directory was removed, replaced, emptied or made unwritable while the
    run went on: the run stopped before writing into it again (one line)."""


class Watch:
    """The run directory as the run found it (its device and inode), checked before
    each write (``problem``): a directory removed, replaced, emptied or made unwritable
    during a run stops it instead of being recreated half-empty by the next write
    (orbax makes missing folders)."""

    def __init__(self, run_dir: str):
        self.run_dir = run_dir
        # held open so that the directory's inode cannot be reused by a new one under its name
        self.fd = os.open(run_dir, os.O_RDONLY)
        st = os.fstat(self.fd)
        self.identity = (st.st_dev, st.st_ino)

    def close(self) -> None:
        """Let go of the directory."""
        if self.fd is not None:
            os.close(self.fd)
            self.fd = None

    def problem(self, laid_out: bool = True, checkpointed: bool = False) -> int:
        """0 when the directory is as it was; else a code (``GONE``, ``REPLACED``,
        ``EMPTIED``, ``UNWRITABLE``, ``NO_CHECKPOINTS``). ``laid_out``: config.yaml is
        expected; ``checkpointed``: a checkpoint was written (``checkpoints/`` expected)."""
        try:
            st = os.stat(self.run_dir)
        except FileNotFoundError:
            return GONE
        except OSError:
            return UNWRITABLE
        if (st.st_dev, st.st_ino) != self.identity:
            return REPLACED
        if laid_out and not os.path.isfile(os.path.join(self.run_dir, "config.yaml")):
            return EMPTIED
        if not os.access(self.run_dir, os.W_OK):
            return UNWRITABLE
        if checkpointed and not os.path.isdir(os.path.join(self.run_dir, "checkpoints")):
            return NO_CHECKPOINTS
        return 0

    def error(self, code: int, done: int, last_checkpoint: int | None) -> RunDirGone:
        """The one line for problem ``code`` found after update ``done``: what happened,
        what is kept, and how to go on."""
        lost = f"the trained state of update {done} was not saved (it is lost)"
        if code in (GONE, REPLACED, EMPTIED, NO_CHECKPOINTS):
            kept = ("its checkpoints went with it: the run cannot be resumed from there; start it again with "
                    "a new --run-dir")
        elif last_checkpoint is not None:
            kept = (f"its checkpoints up to update {last_checkpoint} are intact: make it writable again and "
                    f"continue with `jaxagents train --resume {self.run_dir}`")
        else:
            kept = (f"no checkpoint was written yet: make it writable again and continue with "
                    f"`jaxagents train --resume {self.run_dir}`")
        return RunDirGone(f"run directory {self.run_dir!r} {_PROBLEMS.get(code, 'changed')} during the run: the run "
                          f"stopped after update {done} without writing into it again; {lost}; {kept}")
