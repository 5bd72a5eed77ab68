"""`make watch`: each time a section's module is saved, that section's tests, then the table.

    python -m course.watch [--impl exercises] [--section N] [--poll] [--once] [--timeout S]
                           [-- MAKE ARGUMENTS ...]

It watches the implementation's folder with `watchfiles`, which waits for the operating
system's events. Where a file system sends none (some network, container and virtual
machine mounts), it polls instead: with `--poll`, when the folder lies on a file system
known to send none (FILE_SYSTEMS_WITHOUT_EVENTS), and when the events cannot be had (the
system's limit on watches reached). A save of `sN_*.py` runs `make test SECTION=N` (with
the MAKE ARGUMENTS given after `--`), exactly as the learner would; saves of several
modules at once run their sections in course order; other files are ignored. What was saved
is decided by each module's time and size against those of its last run, at each batch of
events and at least every half second: an event wakes it up, and a save that no event
reported still runs its section, once. Ctrl-C stops it, a run in progress included.

`--once` stops after the first run, and `--timeout S` after S seconds without one: what a
test needs to drive it.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

from .registry import ROOT, SECTIONS, Section, find_section, shown

# File systems whose changes reach no inotify/FSEvents watcher of this machine.
FILE_SYSTEMS_WITHOUT_EVENTS = {"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "virtiofs",
                               "fuse.sshfs", "fuse.vmhgfs-fuse", "vboxsf", "drvfs",
                               "fuse.osxfs", "fakeowner", "fuse.grpcfuse"}
POLL_DELAY_MS = 300  # how often polling looks (watchfiles' polling)
DEBOUNCE_MS = 400  # an editor's save may be several writes: one run for them all


def signatures(folder: Path) -> dict[int, tuple[int, int] | None]:
    """{section number: (mtime in ns, size) of its module in `folder`, None if missing}."""
    found = {}
    for section in SECTIONS:
        try:
            stat = (folder / section.file_name).stat()
            found[section.number] = (stat.st_mtime_ns, stat.st_size)
        except OSError:
            found[section.number] = None
    return found


def saved_since(tested: dict[int, tuple[int, int] | None],
                now: dict[int, tuple[int, int] | None],
                only: Section | None = None) -> list[Section]:
    """The sections whose module was saved (its time or size moved) since `tested` saw it,
    in course order, `tested` brought up to date for them; a module that is missing (being
    renamed into place, say) waits for its next save."""
    found = [s for s in SECTIONS if now[s.number] is not None
             and now[s.number] != tested[s.number] and (only is None or s == only)]
    for section in found:
        tested[section.number] = now[section.number]
    return found


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

    options = dict(watch_filter=section_modules, debounce=DEBOUNCE_MS, stop_event=stop,
                   rust_timeout=500, yield_on_timeout=True, poll_delay_ms=POLL_DELAY_MS)
    try:
        for batch in watchfiles.watch(folder, force_polling=poll, **options):
            yield {path for _, path in batch}
    except OSError as err:  # e.g. the system's limit on watches: poll instead
        if poll:
            raise
        print(f"(no file events here: {err}; polling instead)", flush=True)
        for batch in watchfiles.watch(folder, force_polling=True, **options):
            yield {path for _, path in batch}


def run_section(section: Section, make_args: list[str]) -> int:
    """`make test SECTION=n` as the learner runs it; its exit status."""
    make = os.environ.get("MAKE", "make")
    print(f"\n== {section.file_name} saved: make test SECTION={section.number}", flush=True)
    command = [make, "--no-print-directory", "test", f"SECTION={section.number}", *make_args]
    return subprocess.run(command, cwd=ROOT).returncode


def watch(folder: Path, make_args: list[str], only: Section | None = None, poll: bool = False,
          once: bool = False, timeout: float | None = None) -> int:
    """Run the tests of each section whose module is saved; 0 when stopped by Ctrl-C,
    `--once` or `--timeout`."""
    stop = threading.Event()
    timer = None
    if timeout is not None:
        timer = threading.Timer(timeout, stop.set)
        timer.daemon = True
        timer.start()
    which = f"{only.file_name}" if only else "the section modules"
    how = "polling" if poll else "waiting for file events"
    ready = False
    tested = signatures(folder)  # before the watcher starts: no save after it goes unnoticed
    try:
        for _ in changes(folder, poll, stop):
            if not ready:  # the first batch (empty, after a short wait): the watcher is set up
                ready = True
                print(f"watching {which} in {shown(folder)}/ ({how}): save one to run its "
                      "tests; Ctrl-C stops", flush=True)
            for section in saved_since(tested, signatures(folder), only):
                run_section(section, make_args)
                if once:
                    return 0
                if timer is not None:  # a quiet `timeout` seconds from now
                    timer.cancel()
                    timer = threading.Timer(timeout, stop.set)
                    timer.daemon = True
                    timer.start()
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
    return watch(folder, make_args, only, poll, args.once, args.timeout)


if __name__ == "__main__":
    sys.exit(main())
