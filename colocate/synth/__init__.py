"""synth: what turns the model into dist/ besides the constructs and charts: the job files
(``jobs``), the vendored upstream trees rendered offline (``vendor_render``, by the ``renderers``
Argo CD bundles) and the writer of dist/ (``write``)."""
