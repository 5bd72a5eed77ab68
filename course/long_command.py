"""A long command: a line every few seconds (`Ticker`), and Ctrl-C ends it in one line, with
no traceback, whatever process it reaches.

A terminal's Ctrl-C reaches every process of the command, the forked workers too; each would
print its own traceback. The workers ignore it (`ignore_in_worker`, a pool's initializer)
and the parent, which stops them, says in a line what was kept (`stopped`). The parent waits
for its workers a second at a time (`patiently`, `each`): a wait without a timeout on a
pool's result sleeps through SIGINT here (Linux, Python 3.11), and Ctrl-C would do nothing.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import signal
import threading
from collections.abc import Callable, Iterator
from multiprocessing.pool import AsyncResult, IMapIterator
from typing import Any

__all__ = ["INTERRUPTED", "Ticker", "each", "forking", "ignore_in_worker", "patiently",
           "stopped"]

INTERRUPTED = 130  # the exit status of a command stopped by SIGINT, as a shell reports it


def ignore_in_worker() -> None:
    """A worker's initializer: Ctrl-C is for the parent, which terminates the pool."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


@contextlib.contextmanager
def forking() -> Iterator[None]:
    """Hold Ctrl-C back while a pool forks its workers, and raise it after: one that came
    during a fork would reach an at-fork handler, which swallows it."""
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})


def stopped(command: str, kept: str) -> int:
    """Say that `command` stopped on Ctrl-C and what it `kept`; the exit status to return."""
    print(f"\n{command} stopped (Ctrl-C); {kept}", flush=True)
    return INTERRUPTED


def patiently(result: AsyncResult) -> Any:
    """`result.get()`, waking every second, so that Ctrl-C stops the wait."""
    while not result.ready():
        result.wait(1.0)
    return result.get()


def each(results: IMapIterator) -> Iterator[Any]:
    """The results of `imap` or `imap_unordered` as they come, waking every second, so that
    Ctrl-C stops the wait."""
    while True:
        try:
            yield results.next(timeout=1.0)
        except multiprocessing.TimeoutError:
            continue
        except StopIteration:
            return


class Ticker:
    """Says `line()` through `report` every `every` seconds, from a thread of its own, until
    `stop`: between the lines that finished work writes, a long wait shows it is alive."""

    def __init__(self, line: Callable[[], str], report: Callable[[str], None], every: float = 20.0):
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._tick, args=(line, report, every),
                                        daemon=True)
        self._thread.start()

    def _tick(self, line: Callable[[], str], report: Callable[[str], None], every: float) -> None:
        while not self._stopped.wait(every):
            report(line())

    def stop(self) -> None:
        self._stopped.set()
        self._thread.join()

    close = stop  # for `contextlib.closing`
