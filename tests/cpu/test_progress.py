"""The progress bars: on a terminal after a delay, never when quiet, PAGEWEAVER_PROGRESS wins."""

import io

from pageweaver_edu.core import progress as pw


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_terminal_shows_after_the_delay_pipe_and_quiet_never(monkeypatch):
    monkeypatch.delenv(pw.ENV_PROGRESS, raising=False)
    bar = pw.progress(range(3), desc="x", stream=Tty())
    assert not bar.disable and bar.delay == pw.DELAY_S
    assert pw.progress(range(3), desc="x", stream=io.StringIO()).disable
    assert pw.progress(range(3), desc="x", stream=Tty(), quiet=True).disable


def test_environment_override(monkeypatch):
    monkeypatch.setenv(pw.ENV_PROGRESS, "1")
    out = io.StringIO()
    assert list(pw.progress(range(3), desc="steps", stream=out)) == [0, 1, 2]
    assert "steps" in out.getvalue()
    assert pw.progress(range(3), desc="x", stream=out, quiet=True).disable  # --json wins
    monkeypatch.setenv(pw.ENV_PROGRESS, "0")
    assert pw.progress(range(3), desc="x", stream=Tty()).disable
