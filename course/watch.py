"""`make watch`: each time a section's module is saved, that section's tests, then the table.

    python -m course.watch [--impl exercises] [--section N] [--poll] [--fresh] [--settle S]
                           [--once] [--timeout S] [-- MAKE ARGUMENTS ...]

It watches the implementation's folder with `watchfiles`, which waits for the operating
system's events. Where a file system sends none (some network, container and virtual
machine mounts), it polls instead: with `--poll`, when the folder lies on a file system
known to send none (FILE_SYSTEMS_WITHOUT_EVENTS), and when the events cannot be had (the
system's limit on watches reached). A save of `sN_*.py` runs what `make test SECTION=N` runs
(with the MAKE ARGUMENTS given after `--`): the same commands, so the same output, results
file, state and table; saves of several modules at once run their sections in course order;
other files are ignored. What was saved is decided by each module's time and size against
those of its last run, at each batch of events and at least every half second: an event
wakes it up, and a save that no event reported still runs its section, once. A save runs
once it has settled, when no section module has moved for `--settle` seconds (SETTLE_S): an
editor that writes a file twice gets one run. Bytes written again while a run tests those
very bytes are that run's save too. Ctrl-C stops it, a run in progress included.

The tests run in a preloaded process: a fork server (multiprocessing's "forkserver", started
with the watcher) that has imported torch, torch._dynamo, pytest, hypothesis and the
course's runtime once (PRELOADED) and forks a child for each run, which runs `make test`'s
recipe as `make -n` prints it (the tests, then the table) in itself. A child starts with
those imports done instead of spending seconds on them; it is forked afresh for every run,
so no run inherits another's state. A run begins as soon as its save is seen: pytest
configures itself while the save settles, and its session (the tests, the results' clock and
digests) starts once it has. Fork is safe there because that server is a process of its own,
started afresh: it runs no torch operation (importing torch starts none of its thread pools,
and no device is initialised), so each child sets torch up as a fresh process would; and it
has no thread that could hold a lock across the fork (the one numpy's BLAS starts stops
itself around a fork). The watcher's own threads (the file events', the timeout's) stay in
the watcher. Elsewhere than Linux (on macOS system libraries are not fork-safe; Windows has
no fork), with `--fresh`, and where `make -n` prints more than that recipe (an install
first), a save runs `make test` itself, a process of its own.

`--once` stops after the first run, and `--timeout S` after S seconds without one: what a
test needs to drive it.
"""

from __future__ import annotations

import argparse
import gc
import hashlib
import importlib
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from .registry import ROOT, SECTIONS, Section, find_section, shown

# File systems whose changes reach no inotify/FSEvents watcher of this machine.
FILE_SYSTEMS_WITHOUT_EVENTS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs",
                               "fuse.sshfs", "fuse.vmhgfs-fuse", "vboxsf", "drvfs",
                               "fuse.osxfs", "fakeowner", "fuse.grpcfuse"}
POLL_DELAY_MS = 300  # how often polling looks (watchfiles' polling)
STEP_MS = 10  # a batch of events ends after this long without a new one (watchfiles' step)
DEBOUNCE_MS = 400  # ... or after this long in all
SETTLE_S = 0.1  # a save is over once no module has moved for this long: one run for its writes
LOOK_S = 0.01  # how often a save that is settling is looked at

Signatures = dict[int, tuple[int, int] | None]  # {section number: (mtime in ns, size) | None}


def signatures(folder: Path) -> Signatures:
    """{section number: (mtime in ns, size) of its module in `folder`, None if missing}."""
    found = {}
    for section in SECTIONS:
        try:
            stat = (folder / section.file_name).stat()
            found[section.number] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            found[section.number] = None
    return found


def digest(path: Path) -> str | None:
    """The SHA-256 of `path`'s bytes (hex); None where it cannot be read."""
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError:
        return None


@dataclass
class RunHistory:
    """What the runs have seen: each module's signature when its section last ran (or when
    the watcher started), and the digest of the bytes each section's last run tested with
    the time (ns since the epoch, as a file's mtime) at which that run ended."""

    signatures: Signatures
    runs: dict[int, tuple[str | None, int]] = field(default_factory=dict)


def saved_since(tested: RunHistory, now: Signatures, folder: Path,
                only: Section | None = None) -> list[Section]:
    """The sections whose module was saved (its time or size moved) since `tested` saw it,
    in course order, `tested` brought up to date for them; a module that is missing (being
    renamed into place, say) waits for its next save. A module written again, before the
    end of its section's last run, with the bytes that run tested, is that run's save.

    Args:
        tested: what the runs have seen so far; updated.
        now: the modules' signatures as they are (`signatures(folder)`).
        folder: the watched folder, whose modules' bytes are read where a run's might match.
        only: the one section watched; None: every section.
    """
    found = []
    for section in SECTIONS:
        number, seen = section.number, now[section.number]
        if seen is None or seen == tested.signatures[number] or only not in (None, section):
            continue
        tested.signatures[number] = seen
        tested_bytes, ended = tested.runs.get(number, (None, 0))
        if seen[0] > ended or digest(folder / section.file_name) != tested_bytes:
            found.append(section)
    return found


def settled(folder: Path, settle_s: float) -> Signatures:
    """The signatures of `folder`'s modules once none of them has moved for `settle_s`
    seconds, looked at every LOOK_S."""
    now, still_since = signatures(folder), time.monotonic()
    while (left := settle_s - (time.monotonic() - still_since)) > 0:
        time.sleep(min(left, LOOK_S))
        if (later := signatures(folder)) != now:
            now, still_since = later, time.monotonic()
    return now


def file_system(path: Path) -> str:
    """The type of the file system that holds `path` ("" where /proc/mounts is not there)."""
    try:
        mounts = [line.split() for line in Path("/proc/mounts").read_text().splitlines()]
    except OSError:
        return ""
    path = path.resolve()
    best = ("", "")
    for fields in mounts:
        if len(fields) < 3:
            continue
        point = fields[1].replace("\\040", " ")
        if path.is_relative_to(point) and len(point) > len(best[0]):
            best = (point, fields[2])
    return best[1]


def must_poll(folder: Path) -> bool:
    return file_system(folder) in FILE_SYSTEMS_WITHOUT_EVENTS


def changes(folder: Path, poll: bool, stop: threading.Event) -> Iterator[set[str]]:
    """The paths changed under `folder`, a batch at a time, until `stop` is set."""
    import watchfiles

    modules = {section.file_name for section in SECTIONS}

    def section_modules(_change, path: str) -> bool:
        return Path(path).name in modules

    options = dict(watch_filter=section_modules, debounce=DEBOUNCE_MS, step=STEP_MS,
                   stop_event=stop, rust_timeout=500, yield_on_timeout=True,
                   poll_delay_ms=POLL_DELAY_MS)
    try:
        for batch in watchfiles.watch(folder, force_polling=poll, **options):
            yield {path for _, path in batch}
    except OSError as err:  # e.g. the system's limit on watches: poll instead
        if poll:
            raise
        print(f"(no file events here: {err}; polling instead)", flush=True)
        for batch in watchfiles.watch(folder, force_polling=True, **options):
            yield {path for _, path in batch}


# --- the runs ---------------------------------------------------------------------------------
# What the fork server imports once. Not the section tests' conftest (it sets torch's number
# of threads: a torch call) nor the course's pytest plugins (course.results, course.report),
# whose asserts pytest rewrites as it imports them; what they import, it does.
PRELOADED = ("torch", "torch._dynamo", "pytest", "hypothesis", "hypothesis.extra.numpy",
             "_hypothesis_pytestplugin", "pytest_timeout", "analyses.your_elmo", "course.given",
             "course.progress")
# `make test`'s recipe (course/learner.mk) as `make -n` prints it: the tests, then the table
# unless the tests could not run.
RECIPE = re.compile(r"(?P<tests>.+?) *; status=\$\?; \[ \$status -gt 1 \] \|\| (?P<table>.+); "
                    r"exit \$status")
ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*")
INTERRUPTED_S = 10  # how long a run that Ctrl-C reached may take to stop before it is killed


@dataclass(frozen=True)
class Command:
    """`python -m MODULE ARGS` with the environment variables `env` set."""

    module: str
    args: tuple[str, ...]
    env: dict[str, str]


def _command(line: str, variables: dict[str, str]) -> Command | None:
    """The command of one of the recipe's shell lines, with `variables` and the line's own
    assignments as its environment, if it is `python -m` in this Python; else None."""
    words, env = shlex.split(line), dict(variables)
    while words and ASSIGNMENT.fullmatch(words[0]):
        name, value = words.pop(0).split("=", 1)
        env[name] = value
    if len(words) < 3 or words[1] != "-m" or \
            os.path.abspath(ROOT / words[0]) != os.path.abspath(sys.executable):
        return None
    return Command(words[2], tuple(words[3:]), env)


def planned(section: Section, make_args: list[str]) -> tuple[Command, Command] | None:
    """What `make test SECTION=n` runs now, as `make -n` prints it: the tests' command and
    the table's; None where it would run anything else (an install first) or another
    Python than this one (the fork server's).

    Args:
        section: the section whose tests run.
        make_args: make's further arguments (variables such as RESULTS=..., options).
    """
    make = os.environ.get("MAKE", "make")
    printed = subprocess.run([make, "-n", "--no-print-directory", "test",
                              f"SECTION={section.number}", *make_args],
                             cwd=ROOT, capture_output=True, text=True)
    lines = printed.stdout.strip().splitlines()
    recipe = RECIPE.fullmatch(lines[0]) if printed.returncode == 0 and len(lines) == 1 else None
    if recipe is None:
        return None
    # make exports the variables set on its command line to its recipes' environment
    variables = dict(a.split("=", 1) for a in make_args if ASSIGNMENT.fullmatch(a))
    tests, table = (_command(recipe[part], variables) for part in ("tests", "table"))
    return (tests, table) if tests and table else None


def _main(command: Command, **options) -> int:
    """`python -m MODULE ARGS` in this process: its module's `main(args, **options)`."""
    os.environ.update(command.env)
    sys.argv = [command.module, *command.args]
    return int(importlib.import_module(command.module).main(list(command.args), **options))


def _gate(signal_from_watcher) -> object:
    """A pytest plugin: the session starts once the watcher sends True (the save has
    settled); until then pytest configures, which reads no section module. False, the
    watcher gone, or Ctrl-C: the process ends before it has printed anything."""
    import pytest

    class Gate:
        @pytest.hookimpl(tryfirst=True)  # before the results' clock and digests start
        def pytest_sessionstart(self) -> None:
            try:
                go = signal_from_watcher.recv()
            except (EOFError, KeyboardInterrupt):
                go = False
            if not go:
                os._exit(0)

    return Gate()


def _run(tests: Command, table: Command, signal_from_watcher) -> None:
    """In a child of the fork server: the recipe's two commands, as a fresh process would run
    each: the tests (once the watcher says so: `_gate`), then the table unless the tests
    could not run; exits with the tests' status."""
    # What the server loaded is never garbage: no collection here walks it (pytest collects
    # three times as it ends, a third of a second each over torch's objects).
    gc.freeze()
    # As in a fresh process: Ctrl-C interrupts (the server ignores it), the terminal is
    # stdin (multiprocessing gives a child /dev/null), and numpy's global generator draws a
    # new seed (Python's `random` does so itself at a fork).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    if sys.__stdin__ is not None:
        sys.stdin = open(0, encoding=sys.__stdin__.encoding, errors=sys.__stdin__.errors,
                         closefd=False)
    import numpy

    numpy.random.seed()
    os.chdir(ROOT)
    status = _main(tests, plugins=[_gate(signal_from_watcher)])
    if status <= 1:  # as the recipe: `[ $status -gt 1 ] || table`
        sys.stdout.flush()
        sys.stderr.flush()
        _main(table)
    raise SystemExit(status)


@dataclass
class Run:
    """One `make test SECTION=n` in a child of the fork server, begun as its section's save
    was first seen: pytest configures while the save settles, and runs the tests on `go`."""

    section: Section
    child: object  # a multiprocessing Process
    gate: object  # the sending end of the child's `_gate`

    def go(self) -> int:
        """Run the tests, then the table; the exit status (-N: killed by signal N)."""
        try:
            self.gate.send(True)
        except OSError:  # it has ended already: pytest could not configure itself
            pass
        self.gate.close()
        try:
            self.child.join()
        except KeyboardInterrupt:  # the child had it too: it stops, or is stopped
            self.child.join(INTERRUPTED_S)
            if self.child.exitcode is None:
                self.child.kill()
            raise
        return self.child.exitcode

    def cancel(self) -> None:
        """End it before its tests run (the save came to nothing): it prints nothing."""
        self.gate.close()
        self.child.join()


class Preloaded:
    """The fork server, started at once: its imports are done before the first save."""

    def __init__(self) -> None:
        import multiprocessing.forkserver

        self.context = multiprocessing.get_context("forkserver")
        self.context.set_forkserver_preload(list(PRELOADED))
        # The server ignores Ctrl-C from its start (else one during its imports would print a
        # traceback); it exits when the watcher does. Its children take Ctrl-C again (`_run`).
        handler = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            signal.signal(signal.SIGINT, handler)

    def start(self, section: Section, make_args: list[str]) -> Run | None:
        """Begin `section`'s `make test` in a child, its tests held until `Run.go`; None
        where `make test` would run anything but its recipe (`planned`)."""
        plan = planned(section, make_args)
        if plan is None:
            return None
        receiving, sending = self.context.Pipe(duplex=False)
        child = self.context.Process(target=_run, args=(*plan, receiving), name="make test")
        child.start()
        receiving.close()
        return Run(section, child, sending)


def preload_refusal(platform: str = sys.platform) -> str | None:
    """Why the tests cannot run in a preloaded process on `platform`; None where they can."""
    if platform != "linux":
        return f"on {platform} a forked process is not safe"
    return None


def run_section(section: Section, make_args: list[str], server: Preloaded | None,
                begun: Run | None = None) -> int:
    """`make test SECTION=n` as the learner runs it: `begun` where it is this section's, else
    in a child of `server` where there is one and `make test` runs its recipe, else `make
    test` itself; its exit status."""
    print(f"\n== {section.file_name} saved: make test SECTION={section.number}", flush=True)
    run = begun if begun is not None and begun.section == section else \
        server.start(section, make_args) if server is not None else None
    if run is not None:
        return run.go()
    if server is not None:
        print("(make test runs more than its tests and table now: this run in a process of "
              "its own)", flush=True)
    make = os.environ.get("MAKE", "make")
    command = [make, "--no-print-directory", "test", f"SECTION={section.number}", *make_args]
    return subprocess.run(command, cwd=ROOT).returncode


def watch(folder: Path, make_args: list[str], only: Section | None = None, poll: bool = False,
          once: bool = False, timeout: float | None = None, fresh: bool = False,
          settle_s: float = SETTLE_S) -> int:
    """Run the tests of each section whose module is saved; 0 when stopped by Ctrl-C,
    `--once` or `--timeout`."""
    stop = threading.Event()
    timer = None
    if timeout is not None:
        timer = threading.Timer(timeout, stop.set)
        timer.daemon = True
        timer.start()
    watched = [only] if only else SECTIONS
    which = f"{only.file_name}" if only else "the section modules"
    how = "polling" if poll else "waiting for file events"
    refusal = "--fresh" if fresh else preload_refusal()
    runs = f"each run a process of its own ({refusal})" if refusal else \
        "the tests in a preloaded process"
    ready = False
    # before the watcher starts: no save after it goes unnoticed
    tested = RunHistory(signatures(folder))
    begun: Run | None = None  # a run begun as its save was first seen
    try:
        server = None if refusal else Preloaded()
        for _ in changes(folder, poll, stop):
            if not ready:  # the first batch (empty, after a short wait): the watcher is set up
                ready = True
                print(f"watching {which} in {shown(folder)}/ ({how}; {runs}): save one to run "
                      "its tests; Ctrl-C stops", flush=True)
            now = signatures(folder)
            moved = [s for s in watched if now[s.number] not in (None, tested.signatures[s.number])]
            if moved:  # a save: its run begins, and its tests start once the save is over
                begun = server.start(moved[0], make_args) if server is not None else None
                now = settled(folder, settle_s)
            for section in saved_since(tested, now, folder, only):
                if begun is not None and begun.section != section:
                    begun.cancel()  # the first save to run is another
                    begun = None
                tested_bytes = digest(folder / section.file_name)
                run_section(section, make_args, server, begun)
                begun = None
                tested.runs[section.number] = (tested_bytes, time.time_ns())
                if once:
                    return 0
                if timer is not None:  # a quiet `timeout` seconds from now
                    timer.cancel()
                    timer = threading.Timer(timeout, stop.set)
                    timer.daemon = True
                    timer.start()
            if begun is not None:  # the save came to nothing (its module is missing, say)
                begun.cancel()
                begun = None
            if stop.is_set():
                break
    except KeyboardInterrupt:
        print("\nstopped watching", flush=True)
        return 0
    finally:
        if timer is not None:
            timer.cancel()
    print("stopped watching", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    ours, make_args = (argv[:argv.index("--")], argv[argv.index("--") + 1:]) if "--" in argv \
        else (argv, [])
    parser = argparse.ArgumentParser(prog="python -m course.watch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--impl", type=Path, default=Path("exercises"),
                        help="the folder to watch (default: exercises)")
    parser.add_argument("--section", default=None, help="watch only this section's module")
    parser.add_argument("--poll", action="store_true",
                        help="look for changes every few hundred ms instead of waiting for "
                             "events (for file systems that send none)")
    parser.add_argument("--fresh", action="store_true",
                        help="run each save's `make test` in a process of its own, not in the "
                             "preloaded one")
    parser.add_argument("--settle", type=float, default=SETTLE_S, metavar="S",
                        help=f"run a save once no module has moved for S seconds (default "
                             f"{SETTLE_S:g})")
    parser.add_argument("--once", action="store_true", help="stop after the first run")
    parser.add_argument("--timeout", type=float, default=None,
                        help="stop after this many seconds without a run")
    args = parser.parse_args(ours)
    folder = args.impl if args.impl.is_absolute() else ROOT / args.impl
    if not folder.is_dir():
        parser.error(f"{folder} is not a folder")
    try:
        only = find_section(args.section) if args.section else None
    except KeyError as err:
        parser.error(err.args[0])
    poll = args.poll or must_poll(folder)
    # Ctrl-C reaches the whole foreground group, the tests included: they stop, and so
    # does this, without a traceback.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    return watch(folder, make_args, only, poll, args.once, args.timeout, args.fresh,
                 args.settle)


if __name__ == "__main__":
    sys.exit(main())
