"""What the notebook series draws and runs: figures and widgets per chapter, the live-kernel
cells, the tables the late chapters print, and the shared figure style.

Nothing here is imported by the rest of the package; the modules import plotly and ipywidgets
(the ``notebooks`` extra).
"""
