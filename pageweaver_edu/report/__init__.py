"""``pageweaver report``: one self-contained HTML page that shows a user's own capture the way
the notebook series shows the presets.

* :mod:`.analysis` — the numbers (support sizes, union visits, C4, ρ_Q per W, gain per
  request and chunk, capacity fallbacks), all from the library's own functions;
* :mod:`.figures` — the series' figure helpers applied to them;
* :mod:`.estimate` — a labelled time estimate from a recorded H200 file (live regroup on a GPU);
* :mod:`.page` — the HTML page (plotly.js inlined once) and its atomic write;
* :mod:`.app` — chapter 13's widget (g, B, chunk size, export) over the same analysis;
* :mod:`.command` — the subcommand's arguments and checks.

Everything but :mod:`.command` needs plotly (the ``report`` extra), so nothing is imported
here: ``pageweaver analyze`` and the other subcommands start without it.
"""

SUFFIXES = (".html", ".htm")  #: what a report's file name may end in
#: The windows every report regroups at (the paper's W64 / W128 and chapter 08's W512).
REPORT_WINDOWS = (64, 128, 512)
