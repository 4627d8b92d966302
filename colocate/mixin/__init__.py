"""The colocation mixin as data: recording rules, alerts, dashboards, Alertmanager routing and
their settings (``config.MixinConfig``). No cdk8s: the generator's construct
(``constructs/colocation_mixin.py``) ships it, and ``colocate report`` reads the same names.
"""
