"""The colocation mixin as data: recording rules, alerts, dashboards, Alertmanager routing and
their settings (``config.MixinConfig``), each part a function of the config and their sum in
``colocation.py``. No cdk8s: the generator's charts ship it, and ``colocate report`` reads the
same names.
"""
