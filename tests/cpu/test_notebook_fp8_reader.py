"""Chapter 12's reader material: the Q-row quantization exercise, the kernel regions it shows,
and the readability of its figure and widget."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pageweaver_edu.notebook import fp8 as f8  # noqa: E402
from pageweaver_edu.notebook.kernel_code import kernel_excerpt  # noqa: E402


def _kernel_row(q):
    amax = q.abs().max()
    if amax == 0:
        return torch.zeros_like(q).to(torch.float8_e4m3fn), 0.0
    return (q * (448.0 / amax)).clamp(-448, 448).to(torch.float8_e4m3fn), float(amax / 448.0)


def _one_scale(q):  # no per-row scale: what the exercise must reject
    return q.clamp(-448, 448).to(torch.float8_e4m3fn), 1.0


def _unscaled_value(q):  # right bytes, but the multiplier 448/amax returned as the scale
    q8, scale = _kernel_row(q)
    return q8, (1.0 / scale if scale else 0.0)


def _todo(q):
    raise NotImplementedError


def test_quantize_row_exercise_accepts_the_kernel_rule_and_rejects_others():
    assert f8.QUANTIZE_ROW.run(_kernel_row).passed
    assert f8.QUANTIZE_ROW.run(lambda q: (_kernel_row(q)[0].float(), _kernel_row(q)[1])).passed
    assert not f8.QUANTIZE_ROW.run(_one_scale).passed
    assert not f8.QUANTIZE_ROW.run(_unscaled_value).passed
    todo = f8.QUANTIZE_ROW.run(_todo)
    assert not todo.passed and "not written yet" in todo.message


def test_quantize_row_reference_is_the_emulation():
    row = torch.linspace(-3, 5, 128)
    q8, scale = f8.quantize_row_reference(row)
    assert q8.dtype == torch.float8_e4m3fn and abs(scale - 5 / 448) < 1e-9
    assert float(q8.float().abs().max()) == 448.0
    assert torch.allclose(q8.float() * scale, row, rtol=2**-4, atol=2**-9 * scale)


@pytest.mark.parametrize("region, needle", [
    ("fp8-tile-copy", "a.vt + src"),
    ("fp8-q-quantize", "quantize_q_rows("),
    ("fp8-page-products", "mma_page(d, pa, k_tile + kTileBytes)"),
])
def test_chapter_12_regions_show_the_fp8_steps(region, needle):
    code = kernel_excerpt("union8_fp8.cu", region).code
    assert needle in code and len(code.splitlines()) < 30


def test_e4m3_figure_names_the_ranges_in_the_legend_not_on_the_lines():
    fig = f8.e4m3_error_figure()
    ranges = [t for t in fig.data if t.line.dash in ("dot", "dash")]
    assert len(ranges) == 2 and all(t.text is None and t.name for t in ranges)
    assert fig.layout.showlegend is not False


def test_budget_widget_labels_take_their_own_width():
    pytest.importorskip("ipywidgets")
    from pageweaver_edu.replay.fp8_budget import make_case
    from pageweaver_edu.workloads import capture_like_workload

    cap = capture_like_workload(n=8, prefix_tokens=1024, seed=0)
    app = f8.budget_app(make_case(cap.topk, cap.causal_pos, cap.lengths, seed=0))
    controls = app.children[0].children
    assert [c.description for c in controls] == ["P pre-scale s", "Q magnitude e",
                                                 "Q per-row scale"]
    assert all(c.style.description_width == "initial" for c in controls)
    before = app.children[2].data[0].y
    controls[0].value = 10  # the figure follows the slider
    assert app.children[2].data[0].y != before
