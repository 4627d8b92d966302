"""ColocateChart: a cdk8s Chart that is one folder of dist/."""
from __future__ import annotations

from typing import Sequence

from cdk8s import Chart
from constructs import Construct

from colocate.model.names import COMPONENT_LABEL, MANAGED_BY_LABEL, PART_OF, PART_OF_LABEL



class ColocateChart(Chart):
    """A Chart written to ``dist/<folder>/``.

    App charts (``folder`` under ``apps/``) become one Argo CD Application each, with the
    sync wave and options given here. Every object gets the standard ``app.kubernetes.io``
    labels, except ``app.kubernetes.io/instance``, which Argo CD (before 3.0) uses to track
    what an Application owns.
    """

    #: Sync wave of this chart's Application; cluster-scoped platform objects go first.
    sync_wave: int = 0
    #: ``syncPolicy.syncOptions`` of this chart's Application.
    sync_options: Sequence[str] = ("PruneLast=true",)

    def __init__(self, scope: Construct, id: str, *, folder: str, labels: bool = True):
        super().__init__(
            scope, id,
            disable_resource_name_hashes=True,
            labels={PART_OF_LABEL: PART_OF, MANAGED_BY_LABEL: PART_OF, COMPONENT_LABEL: id} if labels else None,
        )
        self.folder = folder

    @property
    def is_app(self) -> bool:
        return self.folder.startswith("apps/")
