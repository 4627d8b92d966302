"""cdk8s app entry point (cdk8s.yaml): colocate, used as a library, builds the cluster's charts from
colocate.yaml and jobs/ next to this file and writes dist/, the same tree `colocate synth` writes
here. `python main.py --check` says whether dist/ is up to date."""
import os
import sys
from pathlib import Path

from colocate.cli import main

if __name__ == "__main__":
    # colocate reads the nearest colocate.yaml from the working folder up: make that this folder's,
    # wherever cdk8s or a shell starts the script.
    os.chdir(Path(__file__).resolve().parent)
    sys.exit(main(["synth", *sys.argv[1:]]))
