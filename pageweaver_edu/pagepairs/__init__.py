"""Direct KV-page pairs: the page-side organization the paper compared against.

:mod:`.work` builds the incidence R_p, the page pairs and the work items; :mod:`.attention`
computes partials and combines them (float64); :mod:`.torch_ops` does the same with torch on
any device; :mod:`.traffic` counts the bytes.
"""
