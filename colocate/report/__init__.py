"""``colocate report``: the co-location headline from a live Prometheus (headline.py) and its
text, Markdown and JSON renderers (formats.py); docs/report.md."""
