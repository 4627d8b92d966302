# syntax=docker/dockerfile:1
# The colocate image: the `colocate` command for what runs inside the cluster, `colocate
# resubmitter` (a Deployment) and `colocate offline pause|resume` (the schedule's CronJobs), all
# written to dist/ by `colocate synth` (docs/training-control.md). Build and push it per release:
#
#   docker build -t harbor.example.com/platform/colocate:2026.12.0 .
#
# the reference <registry.host>/<registry.imageProject>/colocate:<release> of colocate.yaml. Those
# commands reach the API server with the Kubernetes Python client only: no Node.js, no kubectl.

# Pinned Python patch release on Debian 12, pulled through Harbor's Docker Hub proxy-cache project
# (registry.proxyCacheProjects docker.io: dockerhub; Harbor keeps Docker Hub's library/ path).
# tests/test_dockerfile.py holds the pin to colocate.yaml and pyproject.toml.
FROM harbor.example.com/dockerhub/library/python:3.11.7-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PIP_NO_CACHE_DIR=1

# The package and its pinned dependencies (pyproject.toml), from a read-only view of the build
# context: no copy of the sources, and no build/ folder, stays in the image.
RUN --mount=type=bind,target=/src,rw ["pip", "install", "/src"]

# A fixed numeric user: the kubelet can only prove runAsNonRoot for a numeric USER (the pod
# templates set runAsUser to the same id).
RUN ["groupadd", "--system", "--gid", "10001", "colocate"]
RUN ["useradd", "--system", "--uid", "10001", "--gid", "10001", "--no-create-home", "--home-dir", "/nonexistent", "--shell", "/usr/sbin/nologin", "colocate"]
USER 10001:10001

ENTRYPOINT ["colocate"]
CMD ["--help"]
