"""The analyses behind chapter 13's widget, one per setting (g, B, chunk size), computed once.

A setting's analysis (:func:`~pageweaver_edu.report.analysis.analyze_capture`) takes about a
second on a capture of 15,000 queries, far beyond what a menu may take to answer. So
:class:`SettingCache` keeps every analysis it computed (with whatever the caller derives from
it, e.g. the figures), and :meth:`SettingCache.ahead` computes, in one background thread, the
settings one menu change away from the one shown: the next change a reader makes is then
only a redraw. A setting asked for while the thread computes it is waited for, never computed
twice.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable


class SettingCache:
    """``get(key)`` -> ``make(key)``, computed once per key and kept (the ``keep`` most recent).

    Parameters
    ----------
    make : callable
        ``make(key)`` -> the value of a setting (any object); it may raise, and the exception
        is raised again by every ``get`` of that key.
    choices : dict of int to list
        Position in the key tuple -> the values a control offers there: a key's neighbours
        differ from it in one position.
    keep : int
        Values kept, least recently used dropped first (at least the neighbours + 1).
    """

    def __init__(self, make: Callable, choices: dict[int, list], keep: int = 16):
        self.make, self.choices, self.keep = make, choices, keep
        self.values: OrderedDict = OrderedDict()
        self.running: dict = {}  # key -> threading.Event set when its value is in
        self.todo: list = []
        self.lock = threading.Lock()
        self.worker: threading.Thread | None = None

    def get(self, key):
        """The value of ``key``: kept, computed by the thread (waited for), or computed now."""
        with self.lock:
            done = self.running.get(key)
            mine = key not in self.values and done is None
            if mine:
                done = self.running[key] = threading.Event()
        if mine:
            self._compute(key, done)
        elif done is not None:
            done.wait()
        with self.lock:
            self.values.move_to_end(key)
            value = self.values[key]
        if isinstance(value, BaseException):
            raise value
        return value

    def neighbours(self, key) -> list:
        """The keys one choice away from ``key``, in the order of the positions."""
        return [key[:i] + (v,) + key[i + 1:] for i, vs in self.choices.items() for v in vs
                if v != key[i]]

    def ahead(self, key) -> None:
        """Compute the neighbours of ``key`` not yet kept, in a background thread."""
        with self.lock:
            self.todo = [k for k in self.neighbours(key)
                         if k not in self.values and k not in self.running]
            if self.todo and (self.worker is None or not self.worker.is_alive()):
                self.worker = threading.Thread(target=self._work, daemon=True,
                                               name="pageweaver-settings")
                self.worker.start()

    def _work(self) -> None:
        try:  # the lowest CPU priority: a reader's redraw goes first (Linux threads only)
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
        except (AttributeError, OSError):
            pass
        while True:
            with self.lock:
                if not self.todo:
                    return
                key = self.todo.pop(0)
                if key in self.values or key in self.running:
                    continue
                done = self.running[key] = threading.Event()
            self._compute(key, done)

    def _compute(self, key, done: threading.Event) -> None:
        try:
            value = self.make(key)
        except Exception as exc:  # noqa: BLE001 - kept and raised again by get()
            value = exc
        with self.lock:
            self.values[key] = value
            while len(self.values) > self.keep:
                self.values.popitem(last=False)
            self.running.pop(key, None)
        done.set()
