"""The app server's warm-up waits for readers: `serve.Readers`."""

from __future__ import annotations

import threading
import time

from fiolake.app.serve import Readers

QUIET_S = 0.2


def _waiter(readers: Readers) -> tuple[threading.Thread, threading.Event]:
    done = threading.Event()
    thread = threading.Thread(target=lambda: (readers.wait_quiet(QUIET_S), done.set()))
    thread.start()
    return thread, done


def test_the_warm_up_waits_while_a_page_runs_and_a_while_after() -> None:
    readers = Readers()
    page = readers.running()
    page.__enter__()
    thread, done = _waiter(readers)
    try:
        assert not done.wait(2 * QUIET_S)  # a page running: no warm-up question
    finally:
        ended = time.monotonic()
        page.__exit__(None, None, None)
    assert done.wait(10)
    assert time.monotonic() - ended >= QUIET_S  # and the quiet period after it
    thread.join()


def test_a_page_that_fails_still_ends_its_run() -> None:
    readers = Readers()
    try:
        with readers.running():
            raise RuntimeError("st.stop() or the page's error")
    except RuntimeError:
        pass
    thread, done = _waiter(readers)
    assert done.wait(10)
    thread.join()


def test_with_no_page_run_for_a_while_the_warm_up_asks_at_once() -> None:
    readers = Readers()
    with readers.running():
        pass
    time.sleep(QUIET_S)  # the quiet period itself is what is tested
    start = time.monotonic()
    readers.wait_quiet(QUIET_S)
    assert time.monotonic() - start < QUIET_S
