import sys

from textenvs.cli import main

sys.exit(main())
