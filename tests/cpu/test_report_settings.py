"""Chapter 13's setting cache: each setting computed once, ahead in a thread or on demand."""

from __future__ import annotations

import threading
import time

import pytest

from pageweaver_edu.report.settings import SettingCache


def test_each_setting_is_computed_once_and_neighbours_ahead():
    calls, lock = [], threading.Lock()

    def make(key):
        with lock:
            calls.append(key)
        time.sleep(0.02)
        return sum(key)

    cache = SettingCache(make, {0: [1, 2, 3], 1: [10, 20]})
    assert cache.get((1, 10)) == 11
    assert cache.neighbours((1, 10)) == [(2, 10), (3, 10), (1, 20)]
    cache.ahead((1, 10))
    assert cache.get((3, 10)) == 13  # computed by the thread, or waited for: never twice
    cache.worker.join(5)
    assert cache.get((1, 20)) == 21 and cache.get((2, 10)) == 12
    assert sorted(calls) == [(1, 10), (1, 20), (2, 10), (3, 10)]


def test_an_error_is_raised_by_every_get():
    def make(key):
        raise ValueError(f"bad setting {key}")

    cache = SettingCache(make, {0: [1, 2]})
    for _ in range(2):
        with pytest.raises(ValueError, match="bad setting"):
            cache.get((1,))
    cache.ahead((1,))
    cache.worker.join(5)
    with pytest.raises(ValueError, match=r"bad setting \(2,\)"):
        cache.get((2,))


def test_least_recently_used_settings_leave_first():
    cache = SettingCache(lambda key: key[0], {0: []}, keep=2)
    for k in (1, 2, 1, 3):
        cache.get((k,))
    assert list(cache.values) == [(1,), (3,)]
