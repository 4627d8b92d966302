"""``colocate simulate``: dist/ synced into the real Kubernetes components on loopback (docs/simulate.md)."""
