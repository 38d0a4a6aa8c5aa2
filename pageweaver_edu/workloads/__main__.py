"""``python -m pageweaver_edu.workloads``: the preset statistics table as Markdown."""

from .presets import statistics_markdown

print(statistics_markdown())
