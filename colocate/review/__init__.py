"""Pull-request review: what a change to ``dist/`` does to the cluster.

``tree`` reads dist/ at a git revision or from the working tree, ``compare`` diffs two objects
the way the API server sees them, ``danger`` says which changes need a second look and why,
``policy`` runs ``colocate check`` on both trees, ``diff`` puts it together and ``formats``
renders text, Markdown and JSON.
"""
