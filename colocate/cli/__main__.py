import sys

from colocate.cli import main

sys.exit(main())
