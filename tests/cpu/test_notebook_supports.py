"""Figures and widget callbacks of chapters 00–02 (pageweaver_edu.notebook.supports)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("plotly")
pytest.importorskip("ipywidgets")

from pageweaver_edu.core.supports import token_support  # noqa: E402
from pageweaver_edu.core.union_metrics import union_stats, useful_fraction  # noqa: E402
from pageweaver_edu.notebook import overview  # noqa: E402
from pageweaver_edu.notebook import supports as vs  # noqa: E402
from pageweaver_edu.notebook.style import subtitle_text  # noqa: E402
from pageweaver_edu.workloads import uniform_workload  # noqa: E402


def _xs(trace) -> list[int]:
    return [int(x) for x in trace.x]


def test_dataflow_figure_has_labelled_boxes_and_arrows():
    fig = overview.dataflow_figure()
    assert len(fig.layout.shapes) == len(overview.STAGES) == 6
    texts = " ".join(a.text for a in fig.layout.annotations)
    for title, _, _ in overview.STAGES:
        assert f"<b>{title}</b>" in texts
    arrows = [a for a in fig.layout.annotations if a.showarrow]
    assert len(arrows) == 5
    assert "π[r]" in texts and "H200" in texts


def test_chapter_table_links_only_existing_notebooks(tmp_path):
    (tmp_path / "01_support_sets.ipynb").write_text("{}")
    table = overview.chapter_table(tmp_path).splitlines()
    assert len(table) == 2 + len(overview.CHAPTERS) == 16
    assert "(01_support_sets.ipynb)" in table[3]
    assert "*coming*" in table[2] and "*coming*" in table[-1]
    assert "H200" in table[2 + 7]


def test_token_strip_paper_example():
    fig = vs.token_strip_figure(widget=False)
    attended = vs.update_token_strip(fig, [0, 2], 4, 11, 9)
    assert attended.tolist() == [0, 1, 2, 3, 8, 9]
    assert [t.name for t in fig.data[:5]] == [k[0] for k in vs.TOKEN_KINDS]
    attended_x, causal, length, both, unselected = (_xs(t) for t in fig.data[:5])
    assert attended_x == [0, 1, 2, 3, 8, 9]
    assert causal == [10] and length == [] and both == [11]
    assert unselected == [4, 5, 6, 7, 12, 13, 14, 15]
    assert set(fig.data[0].text) == {"A"} and list(fig.data[3].text) == ["LC"]
    assert [t.marker.pattern.shape for t in fig.data[:5]] == ["", "x", "/", "+", "."]
    assert list(fig.data[5].text) == ["p0 ✓", "p1", "p2 ✓", "p3"]
    assert "|A<sub>i</sub>| = 6" in subtitle_text(fig)
    assert fig.layout.xaxis.title.text == "token position t (tokens)"


def test_token_strip_matches_token_support_and_covers_every_token():
    rng = np.random.default_rng(7)
    fig = vs.token_strip_figure(widget=False)
    for _ in range(50):
        p = int(rng.choice([1, 4, 8, 128]))
        pages = rng.integers(-2, 12, size=int(rng.integers(0, 6))).tolist()  # padding, repeats
        length, causal = int(rng.integers(0, 14 * p)), int(rng.integers(0, 14 * p))
        attended = vs.update_token_strip(fig, pages, p, length, causal)
        shown = np.sort(np.concatenate([np.asarray(t.x, dtype=np.int64) for t in fig.data[:5]]))
        assert shown.tolist() == list(range(len(shown)))  # every token in exactly one kind
        expected = token_support(pages, p, length, causal)
        assert attended.tolist() == expected[expected < len(shown)].tolist()
        assert _xs(fig.data[0]) == attended.tolist()


def test_token_strip_app_updates_in_place():
    app = vs.token_strip_app()
    fig = app.figs[0]
    assert _xs(fig.data[0]) == [0, 1, 2, 3, 8, 9]
    app.controls["c"].value = 11
    assert app.figs[0] is fig
    assert _xs(fig.data[0]) == [0, 1, 2, 3, 8, 9, 10] and _xs(fig.data[2]) == [11]
    app.controls["pages"].value = "2, 2, -1"
    assert _xs(fig.data[0]) == [8, 9, 10]
    app.controls["P"].value = 8
    assert app.controls["L"].max == 128 and app.controls["c"].max == 128
    assert subtitle_text(fig).startswith("P = 8, S<sub>i</sub> = {2}")
    before = list(fig.data[0].x)
    app.controls["pages"].value = "0, two"
    assert "⚠" in app.status.value and list(fig.data[0].x) == before
    app.controls["pages"].value = "0"
    assert app.status.value == "" and _xs(fig.data[0]) == list(range(8))


def test_parse_pages():
    assert vs.parse_pages("{0, 2, -1}") == [0, 2, -1]
    assert vs.parse_pages(" 3 5;7 ") == [3, 5, 7]
    assert vs.parse_pages("") == []
    with pytest.raises(ValueError):
        vs.parse_pages("1, x")


def test_group_mask_paper_example():
    fig = vs.mask_figure(widget=False)
    info = vs.update_group_mask(fig, [[1, 4, 7], [1, 4, 9]])
    assert info["union"].tolist() == [1, 4, 7, 9]
    assert info["rho"] == 1.5 and info["useful"] == 0.75
    assert info["useful"] == useful_fraction([[1, 4, 7], [1, 4, 9]], [0, 1])
    heat = fig.data[0]
    assert list(heat.x) == ["1", "4", "7", "9"]
    assert np.asarray(heat.text).tolist() == [["1", "1", "1", "·"], ["1", "1", "·", "1"]]
    assert list(heat.y) == ["q0 |S|=3", "q1 |S|=3"]
    assert "ρ = 1.5" in subtitle_text(fig)
    assert "75.0%" in subtitle_text(fig)


def test_group_mask_empty_group():
    info = vs.update_group_mask(vs.mask_figure(widget=False), [[], [-1]])
    assert info["union"].size == 0 and np.isnan(info["useful"])


def test_group_editor_app_updates_in_place():
    app = vs.group_editor_app()
    fig = app.figs[0]
    assert list(fig.data[0].x) == ["1", "4", "7", "9", "12"]
    app.controls["q3"].value = "1, 4"
    assert app.figs[0] is fig
    assert list(fig.data[0].x) == ["1", "4", "7", "9"]
    assert "75.0%" in subtitle_text(fig)
    app.controls["q0"].value = "oops"
    assert "⚠" in app.status.value and list(fig.data[0].x) == ["1", "4", "7", "9"]


def test_preset_profile_matches_union_metrics():
    topk = uniform_workload(200, 40, k=6, seed=3).topk
    fig, mask_fig = vs.profile_figure(widget=False), vs.mask_figure(widget=False)
    out = vs.update_preset_profile(fig, mask_fig, topk, 200, 8, 5)
    stats = union_stats(topk, group=8)
    assert out["stats"].union_visits == stats.union_visits
    assert np.array_equal(out["union"], stats.union_sizes)
    assert len(fig.data[1].x) == 25 and list(fig.data[1].y) == stats.union_sizes.tolist()
    assert list(fig.data[0].y) == [48] * 25
    group5 = list(range(40, 48))
    assert out["useful"][5] == pytest.approx(useful_fraction(topk, group5))
    assert out["mask"]["union"].size == stats.union_sizes[5]
    assert mask_fig.layout.title.text.startswith("group 5: ")
    assert f"{stats.union_visits:,}" in subtitle_text(fig)


def test_preset_profile_app_redraws_only_the_mask_for_a_new_group(monkeypatch):
    topk = uniform_workload(300, 64, k=8, seed=1).topk
    app = vs.preset_profile_app(topk, n=256, group=8)
    mask_fig = app.figs[1]
    with monkeypatch.context() as m:  # the profile of the same N and g is not computed again
        m.setattr(vs, "update_preset_profile", lambda *a: pytest.fail("profile redrawn"))
        app.controls["G"].value = 7
    assert app.status.value == ""
    want = vs.mask_figure(widget=False)
    vs.update_preset_profile(vs.profile_figure(widget=False), want, topk, 256, 8, 7)
    got = mask_fig.data[0]
    assert np.array_equal(got.z, want.data[0].z) and np.array_equal(got.text, want.data[0].text)
    assert mask_fig.layout.title.text == want.layout.title.text


def test_preset_profile_app_updates_in_place():
    topk = uniform_workload(300, 64, k=8, seed=1).topk
    app = vs.preset_profile_app(topk, n=256, group=8)
    fig, mask_fig = app.figs
    assert len(fig.data[1].x) == 32 and app.controls["G"].max == 31
    app.controls["g"].value = 2
    assert app.figs[0] is fig and len(fig.data[1].x) == 128 and app.controls["G"].max == 127
    app.controls["G"].value = 100
    assert mask_fig.layout.title.text.startswith("group 100: ")
    assert list(mask_fig.data[0].y) == ["r = 0: q200 |S|=8", "r = 1: q201 |S|=8"]
    app.controls["n"].value = 64  # G is clamped to the last group of the shorter range
    assert app.controls["G"].value == 31 and len(fig.data[1].x) == 32
    assert mask_fig.layout.title.text.startswith("group 31: ")
