"""The test suite: cpu/ (runs everywhere), gpu/ (needs an H200-class GPU), notebooks/ (the
committed series), browser/ (the series in a real browser); helpers/ is shared by them."""
