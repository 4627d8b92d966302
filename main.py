"""cdk8s app entry point (cdk8s.yaml): synthesize the cluster into dist/, atomically."""
import sys

from colocate.cli import main

if __name__ == "__main__":
    sys.exit(main(["synth"]))
