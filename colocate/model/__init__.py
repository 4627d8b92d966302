"""The cluster as plain data: pools, tiers, namespaces and the names everything shares.

Nothing here imports cdk8s. The generator (constructs/, charts/), the checker
(colocate/checker/, policies/checks/), the schema generator and the simulation all read the
same facts from here, each written once.
"""
