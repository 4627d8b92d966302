"""Resubmission of TFJobs that a disruption failed (docs/resubmission.md)."""
